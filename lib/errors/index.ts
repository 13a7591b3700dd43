export { AwaErrorCodes, type AwaErrorCode } from './awa-error-codes.js';
export { AwaError } from './awa.error.js';
export { AwaOptionError } from './awa-option.error.js';
export { AwaSetupError } from './awa-setup.error.js';
export { EnqueueValidationError } from './enqueue-validation.error.js';
export { HandlerRegistrationError } from './handler-registration.error.js';
export { SchemaError } from './schema.error.js';
export { StatementTimeoutError } from './statement-timeout.error.js';
export { AwaAssertionError } from './awa-assertion.error.js';
