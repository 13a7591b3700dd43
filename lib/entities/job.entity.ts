import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { JobError, JobState } from '../interfaces/job.interface.js';

/**
 * A job row, for reading jobs with TypeORM (repositories, query builders, relations of your own).
 * The queue itself writes with raw SQL; the schema comes from the bundled migrations, never from
 * `synchronize`. It maps awa.jobs: unfinished jobs (and finished unique jobs holding their key);
 * finished jobs are in awa.job_history, and the view awa.all_jobs reads both (docs/storage.md).
 */
@Entity({ schema: 'awa', name: 'jobs', synchronize: false })
export class AwaJobEntity<TArgs = unknown> {
  /** bigint, as a string. */
  @PrimaryColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'text' }) kind!: string;
  @Column({ type: 'text' }) queue!: string;
  @Column({ type: 'jsonb' }) args!: TArgs;
  @Column({ type: 'text' }) state!: JobState;
  @Column({ type: 'smallint' }) priority!: number;
  @Column({ type: 'integer' }) attempt!: number;
  @Column({ type: 'integer', name: 'max_attempts' }) maxAttempts!: number;
  @Column({ type: 'timestamptz', name: 'run_at' }) runAt!: Date;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'attempted_at', nullable: true }) attemptedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'finalized_at', nullable: true }) finalizedAt!: Date | null;
  @Column({ type: 'jsonb' }) errors!: JobError[];
  /** bigint, as a string. */
  @Column({ type: 'bigint', name: 'run_lease' }) runLease!: string;
  /** Shutdown releases since the job last spent an attempt (see docs/recovery.md, "Shutdown"). */
  @Column({ type: 'integer', name: 'shutdown_releases' }) shutdownReleases!: number;
  @Column({ type: 'text', array: true }) tags!: string[];
  /** Set for unique jobs: the key a job blocks while its state is one of `uniqueStates`. */
  @Column({ type: 'text', name: 'unique_key', nullable: true }) uniqueKey!: string | null;
  @Column({ type: 'text', name: 'unique_states', array: true, nullable: true }) uniqueStates!: JobState[] | null;
  /** Times the job snoozed; a snooze spends no attempt. */
  @Column({ type: 'integer' }) snoozes!: number;
  /** The last value the running handler reported with job.progress(). */
  @Column({ type: 'jsonb', nullable: true }) progress!: unknown;
  /** The handler's return value, when it returned one. */
  @Column({ type: 'jsonb', nullable: true }) output!: unknown;
  /** The W3C trace context stored at enqueue when a span was active (OpenTelemetry). */
  @Column({ type: 'text', nullable: true }) traceparent!: string | null;
  /** The workflow the job belongs to (docs/workflows.md), else null. */
  @Column({ type: 'uuid', name: 'workflow_id', nullable: true }) workflowId!: string | null;
  /** Dependencies not ended yet: the job is `waiting` while it is above 0. */
  @Column({ type: 'integer', name: 'waiting_on' }) waitingOn!: number;
}
