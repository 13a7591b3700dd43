// nestjs-awa/testing: test helpers. Import AwaTestingModule next to AwaModule.forRoot({ ..., testing: true });
// the core never imports lib/testing/.
export { AwaTestingModule } from './awa-testing.module.js';
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
