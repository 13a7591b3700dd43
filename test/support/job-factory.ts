/**
 * The one factory for seeding rows the way the queue leaves them: jobs in any state, and running
 * jobs with their lease, on any connection (`Exec`). No state logic: a seed is inserted as given.
 */

/** Runs plain SQL and returns the rows: a pg Pool/Client or a TypeORM DataSource behind it. */
export type Exec = (text: string, values?: unknown[]) => Promise<any[]>;

export interface JobSeed {
  kind?: string;
  queue?: string;
  state?: string;
  priority?: number;
  attempt?: number;
  maxAttempts?: number;
  runLease?: number;
  /** run_at relative to now(), in ms (negative: in the past). Default 0. */
  runAtMs?: number;
  /** An absolute run_at (wins over runAtMs), for exact ties. */
  runAt?: Date;
  /** finalized_at relative to now(), in ms; null/undefined leaves it NULL. */
  finalizedAtMs?: number | null;
  args?: unknown;
}

/** Inserts one job row as given (no state logic) and returns its id. */
export async function seedJob(exec: Exec, seed: JobSeed = {}): Promise<string> {
  const [row] = await exec(
    `INSERT INTO awa.jobs (kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, finalized_at, args)
     VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($11::timestamptz, now() + $8::float8 * interval '1 millisecond'),
             CASE WHEN $9::float8 IS NULL THEN NULL ELSE now() + $9::float8 * interval '1 millisecond' END, $10::jsonb)
     RETURNING id::text`,
    [
      seed.kind ?? 'k',
      seed.queue ?? 'default',
      seed.state ?? 'available',
      seed.priority ?? 0,
      seed.attempt ?? 0,
      seed.maxAttempts ?? 25,
      seed.runLease ?? 0,
      seed.runAtMs ?? 0,
      seed.finalizedAtMs ?? null,
      JSON.stringify(seed.args ?? {}),
      seed.runAt ?? null,
    ],
  );
  return row.id;
}

export interface RunningSeed extends Omit<JobSeed, 'state' | 'finalizedAtMs'> {
  instanceId?: string;
  /** How old the lease's heartbeat (and so its claim, which a heartbeat never precedes) is, in ms. Default 0. */
  heartbeatAgeMs?: number;
  /** deadline_at relative to now(), in ms; null: no deadline. Default null. */
  deadlineInMs?: number | null;
}

/** A running job (attempt >= 1) with its lease row, as a claim would leave it. */
export async function seedRunning(exec: Exec, seed: RunningSeed = {}): Promise<{ id: string; runLease: string }> {
  const attempt = seed.attempt ?? 1;
  const runLease = seed.runLease ?? attempt;
  const id = await seedJob(exec, { ...seed, state: 'running', attempt, runLease });
  await seedLease(exec, id, runLease, seed);
  return { id, runLease: String(runLease) };
}

export async function seedLease(
  exec: Exec,
  jobId: string,
  runLease: number | string,
  seed: Pick<RunningSeed, 'instanceId' | 'heartbeatAgeMs' | 'deadlineInMs'> = {},
): Promise<void> {
  await exec(
    `INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at)
     VALUES ($1::bigint, $2::bigint, $3, now() - $4::float8 * interval '1 millisecond',
             CASE WHEN $5::float8 IS NULL THEN NULL ELSE now() + $5::float8 * interval '1 millisecond' END,
             now() - $4::float8 * interval '1 millisecond')`,
    [jobId, String(runLease), seed.instanceId ?? 'instance-a', seed.heartbeatAgeMs ?? 0, seed.deadlineInMs ?? null],
  );
}

/** A job for insertJobs, by field name (args left out: JSON null). */
export interface InsertJobFields {
  kind: string;
  queue: string;
  args?: unknown;
  priority: number;
  max_attempts: number;
  run_at?: string | null;
  tags?: string[];
  concurrency_key?: string;
  traceparent?: string;
}

/** insertJobs' parameter: each job as the array of its fields in the statement's order. */
export function insertJobsRows(jobs: readonly InsertJobFields[]): string {
  return JSON.stringify(
    jobs.map((j) => [
      j.kind,
      j.queue,
      j.args ?? null,
      j.priority,
      j.max_attempts,
      j.run_at ?? null,
      j.tags ?? null,
      j.concurrency_key ?? null,
      j.traceparent ?? null,
    ]),
  );
}

/** A job of workflowSql.insertGraph's payload: kind `kind` on queue default, waiting for `waitingOn` dependencies. */
export const graphJob = (kind: string, waitingOn: number) =>
  ({ kind, queue: 'default', args: {}, priority: 0, max_attempts: 1, run_at: null, waiting_on: waitingOn }) as const;
