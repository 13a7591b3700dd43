// nestjs-awa/health: the @nestjs/terminus health indicator. Only this entry imports @nestjs/terminus.
export { AwaHealthIndicator } from './awa-health.indicator.js';
export { AwaHealthModule } from './awa-health.module.js';
export type { AwaQueueStatus, AwaStatusSnapshot } from '../awa.status.js';
