import { AwaActiveLeaseEntity } from './active-lease.entity.js';
import { AwaInstanceEntity } from './instance.entity.js';
import { AwaJobEntity } from './job.entity.js';

export { AwaActiveLeaseEntity, AwaInstanceEntity, AwaJobEntity };

/** Every entity of the queue: spread into your DataSource `entities` if you do not use autoLoadEntities. */
export const AwaEntities = [AwaJobEntity, AwaActiveLeaseEntity, AwaInstanceEntity];
