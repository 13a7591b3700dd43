// nestjs-awa/testing: test helpers. Use with AwaModule.forRoot({ ..., testing: true }).
export { AwaTesting } from './awa-testing.service.js';
export type {
  DrainedJob,
  DrainOptions,
  DrainResult,
  EnqueuedJobsFilter,
  FiredSchedule,
  FireSchedulesOptions,
} from './awa-testing.types.js';
export { AwaAssertionError } from '../errors/awa-assertion.error.js';
