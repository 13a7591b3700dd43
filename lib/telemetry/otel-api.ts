import { AwaTelemetryMessages } from '../awa.messages.js';
import { AwaSetupError } from '../errors/awa-setup.error.js';

/** @internal The @opentelemetry/api module: an optional peer, so only its type is imported statically. */
export type OtelApi = typeof import('@opentelemetry/api');

/**
 * @internal Loads @opentelemetry/api on first use, so that nestjs-awa itself never requires it.
 * `import()` stays a dynamic import in the ESM build and becomes `require` in the CommonJS one.
 */
export async function loadOtelApi(): Promise<OtelApi> {
  try {
    return await import('@opentelemetry/api');
  } catch (error) {
    throw new AwaSetupError(AwaTelemetryMessages.apiMissing(error instanceof Error ? error.message : String(error)));
  }
}
