// The shapes of the JSON API's answers, as the pages read them (dates are ISO strings, ids strings).

export type JobState =
  'scheduled' | 'available' | 'running' | 'retryable' | 'completed' | 'failed' | 'cancelled' | 'waiting';

/** GET /api/event-groups: a durable-event group's position and lag (JobEventGroups.groups()). */
export interface EventGroupSummary {
  group: string;
  /** The named AwaModule whose database holds the group; absent for the default module's. */
  module?: string;
  holder: string | null;
  leaseUntil: string | null;
  failures: number;
  lastError: string | null;
  lagEvents: number;
  lagMs: number;
}

export interface QueueSummary {
  name: string;
  paused: boolean;
  counts: Record<JobState, number>;
  estimated: JobState[];
  oldestAvailableAgeMs: number | null;
  completedPerSecond: number;
  failedPerSecond: number;
}

export interface Minute {
  minute: string;
  completed: number;
  failed: number;
}

export interface JobError {
  attempt: number;
  at: string;
  error: string;
}

export interface JobRecord {
  id: string;
  state: JobState;
  queue: string;
  kind: string;
  args: unknown;
  tags: string[];
  attempt: number;
  maxAttempts: number;
  priority: number;
  uniqueKey: string | null;
  workflowId: string | null;
  snoozes: number;
  errors: JobError[];
  output: unknown;
  progress: unknown;
  createdAt: string;
  runAt: string;
  attemptedAt: string | null;
  finalizedAt: string | null;
}

export interface JobPage {
  jobs: JobRecord[];
  next: string | null;
  bounded: boolean;
  window?: number;
}

export interface JobCount {
  count: number;
  capped: boolean;
  bounded: boolean;
}

export interface Lease {
  instance_id: string;
  claimed_at: string;
  heartbeat_age_ms: number;
  deadline_at: string;
}

export interface JobLink {
  side: 'dependency' | 'dependent';
  id: string;
  ref: string;
  policy: string;
  kind: string | null;
  state: JobState | 'deleted';
}

export interface JobDetail {
  job: JobRecord;
  lease: Lease | null;
  /** A workflow job's dependencies and dependents. */
  links: JobLink[];
}

export interface BulkAnswer {
  count?: number;
  deleted?: number;
  cancelled?: number;
}

export interface Outcome {
  outcome: string;
}

export interface Schedule {
  name: string;
  kind: string;
  queue: string;
  cron: string;
  timeZone?: string | null;
  paused: boolean;
  nextFireAt: string | null;
  lastFireAt: string | null;
}

export interface Instance {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  leader: boolean;
  leases: number;
  heartbeat_age_ms: number;
  started_at: string;
}

export interface WorkflowJob {
  id: string;
  kind: string;
  queue: string;
  state: JobState;
  attempt: number;
  waitingOn: number;
  createdAt: string;
  finalizedAt: string | null;
}

export interface WorkflowEdge {
  dependentId: string;
  dependencyId: string;
  /** The dependency's ref, as the dependent names it. */
  ref: string;
  policy: 'cancel' | 'fail' | 'ignore';
  state: 'completed' | 'failed' | 'cancelled' | 'deleted' | null;
}

export interface WorkflowView {
  id: string;
  state: 'running' | 'completed' | 'failed' | 'cancelled';
  jobs: number;
  createdAt: string;
  finishedAt: string | null;
  jobList: WorkflowJob[];
  edges: WorkflowEdge[];
}
