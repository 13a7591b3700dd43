/** Injection token of the resolved module options. */
export const AWA_OPTIONS = Symbol('AWA_OPTIONS');
/** Injection token of the raw options given to forRoot / forRootAsync. */
export const AWA_RAW_OPTIONS = Symbol('AWA_RAW_OPTIONS');
/** Metadata key set by @JobHandler on a method. */
export const JOB_HANDLER_METADATA = 'awa:job-handler';

/** NOTIFY channel: the payload is the queue name of newly available jobs. */
export const AWA_JOBS_CHANNEL = 'awa_jobs';
/** NOTIFY channel: the payload is the id of a running job that producer.cancel() was called for. */
export const AWA_CANCEL_CHANNEL = 'awa_cancel';
/** NOTIFY channel: `pause:<queue>` or `resume:<queue>`, sent by QueueAdmin (a resume wakes the workers). */
export const AWA_CONTROL_CHANNEL = 'awa_control';
/**
 * NOTIFY channel: a job handed to an idle worker at enqueue (docs/handoff.md), as JSON
 * `{"i": instance id, "q": queue, "r": [the claimed row's columns]}`; only instance `i` runs it.
 */
export const AWA_HANDOFF_CHANNEL = 'awa_handoff';

/** Advisory-lock key of maintenance leadership (a bigint; migrations use ...0002). */
export const MAINTENANCE_LOCK_KEY = '6182721100001';
/** The awa.leader row of maintenance leadership (connectionMode 'transaction-pooler'). */
export const MAINTENANCE_LEASE = 'maintenance';

export const DEFAULT_QUEUE = 'default';
/** Priority bounds: a smallint, lower runs first (like graphile-worker). */
export const PRIORITY_MIN = -32768;
export const PRIORITY_MAX = 32767;
/** Injection token of the host's SchedulerRegistry, checked at boot. */
export const AWA_SCHEDULER = Symbol('AWA_SCHEDULER');
