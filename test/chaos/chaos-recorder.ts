// The handlers' side table writer of a chaos worker process (chaos.runs, chaos.event_deliveries, and
// the counted jobs' writes), in the database of the job's own queue: with --second-server, a job or an
// event of SECOND_QUEUE is recorded on the second server, where its checks read it.
import { Inject, Injectable, Optional } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { JobTransactionError, type Job, type JobEvent } from 'nestjs-awa';
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import { COUNTED_ERROR, SECOND_DATA_SOURCE, SECOND_QUEUE, type ChaosArgs, type ChaosStepArgs } from './chaos-config.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The DataSource's pg Pool: `driver.master` in TypeORM 0.3 and 1.x. */
export function pgPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

/** Does the handlers' work and records finished runs in the side table (chaos.runs). */
@Injectable()
export class RunRecorder {
  /** The app's own pools: the public API does not expose the queue's database layer. */
  private readonly pool: Pool;
  private readonly secondPool: Pool | undefined;

  constructor(dataSource: DataSource, @Optional() @Inject(getDataSourceToken(SECOND_DATA_SOURCE)) second?: DataSource) {
    this.pool = pgPoolOf(dataSource);
    this.secondPool = second && pgPoolOf(second);
  }

  /** A handler's work: its args' run time, then the record of the finished run. */
  async work(job: Job<ChaosArgs | ChaosStepArgs>) {
    await sleep(job.args.ms);
    await this.record(job);
  }

  /** The record of a finished run, inside the job.transaction that completes the job. */
  async recordIn(manager: EntityManager, job: Job<ChaosArgs>) {
    await manager.query(`INSERT INTO chaos.runs (job_id, attempt, run_lease, pid, token) VALUES ($1, $2, $3, $4, $5)`, [
      job.id,
      job.attempt,
      job.runLease,
      process.pid,
      randomUUID(),
    ]);
  }

  /**
   * Records a finished run in the side table. It must survive the PostgreSQL restart, so it
   * retries; the token makes a retry after an ambiguous commit insert nothing twice, so two rows
   * for one (job, run_lease) can only mean the lease really ran twice.
   * It writes through pool.query, not dataSource.query: a TypeORM QueryRunner takes a new pool
   * client and attaches its 'error' listener one microtask later, and a server shutting down just
   * then (its FATAL arriving in the same read as ReadyForQuery) crashes the process with an
   * unhandled 'error'. That is TypeORM's gap, not the queue's; this suite tests the queue.
   */
  async record(job: Job<ChaosArgs | ChaosStepArgs>) {
    await this.insertOnce(job.queue, 'runs', {
      job_id: job.id,
      attempt: job.attempt,
      run_lease: job.runLease,
      pid: process.pid,
    });
  }

  /** Records a durable event the `chaos` group handled, as record() does a run (its token: one row per delivery). */
  async delivered(event: JobEvent) {
    await this.insertOnce(event.queue, 'event_deliveries', {
      event_id: event.id,
      job_id: event.jobId,
      event: event.event,
      pid: process.pid,
    });
  }

  /** One row into chaos.`table` in the database of `queue`, retried, with a token so that it lands once. */
  private async insertOnce(queue: string, table: 'runs' | 'event_deliveries', row: Record<string, unknown>) {
    const values = [...Object.values(row), randomUUID()];
    const columns = [...Object.keys(row), 'token'].join(', ');
    const params = values.map((_, i) => `$${i + 1}`).join(', ');
    await this.retried(`a row of chaos.${table}`, () =>
      this.poolOf(queue).query(
        `INSERT INTO chaos.${table} (${columns}) SELECT ${params}
          WHERE NOT EXISTS (SELECT 1 FROM chaos.${table} WHERE token = $${values.length})`,
        values,
      ),
    );
  }

  /** Ids are per database: a job's or an event's record goes to the database of its queue. */
  private poolOf(queue: string): Pool {
    if (queue !== SECOND_QUEUE) return this.pool;
    if (!this.secondPool) throw new Error(`chaos: a job of ${SECOND_QUEUE} without the second server's DataSource`);
    return this.secondPool;
  }

  private async retried(what: string, write: () => Promise<unknown>) {
    const giveUpAt = Date.now() + 15_000;
    for (;;) {
      try {
        await write();
        return;
      } catch (error) {
        if (Date.now() > giveUpAt)
          throw new Error(`chaos: could not record ${what}: ${String(error)}`, { cause: error });
        await sleep(100);
      }
    }
  }
}

/**
 * A counted job: exactly once under every fault, the counter, its note and the run's record commit
 * with the completion or not at all (in the database of the job's queue). A refused transaction
 * (lease lost) throws on as it is (its failure is fenced out); any other rollback (a fault) fails the
 * attempt with the one documented text.
 */
export async function countOnce(runs: RunRecorder, job: Job<ChaosArgs>): Promise<void> {
  await sleep(job.args.ms);
  try {
    await job.transaction(async (manager) => {
      await manager.query('UPDATE chaos.counter SET n = n + 1 WHERE id = 1');
      await manager.query('INSERT INTO chaos.counted (job_id, run_lease) VALUES ($1, $2)', [job.id, job.runLease]);
      await runs.recordIn(manager, job);
    });
  } catch (error) {
    if (error instanceof JobTransactionError) throw error;
    throw COUNTED_ERROR;
  }
}
