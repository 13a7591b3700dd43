import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { AwaMessages } from '../../lib/awa.messages.js';
import {
  HELD_WARN_AFTER,
  HistoryRotationTask,
  ROTATION_LOCK_TIMEOUT_MS,
} from '../../lib/maintenance/tasks/history-rotation.task.js';
import { seedJob, type Exec } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';
import { sessionSql } from '../../lib/sql/index.js';

const HOUR = 3_600_000;

/** Rings are moved in time by SQL (rotated_at, sealed_at): no test waits for a width to pass. */
describe('HistoryRotationTask', () => {
  // Completed: retention 1 h, width 10 min. Failed: kept forever.
  const ctx = useQuietApp(
    { retention: { completed: HOUR, failed: 0 } },
    {
      reset: (exec) =>
        exec(`UPDATE awa.history_rings SET segment = CASE class WHEN 'completed' THEN 0 ELSE 8 END, rotated_at = now();
              UPDATE awa.history_segments SET sealed_at = NULL`),
    },
  );
  const task = () => ctx.task(HistoryRotationTask);

  /** A completed job in segment `segment` of awa.job_history (as a completion into it leaves it). */
  async function archived(exec: Exec, segment: number): Promise<string> {
    const id = await seedJob(exec, { state: 'completed', attempt: 1, finalizedAtMs: 0 });
    await exec(
      `WITH moved AS (DELETE FROM awa.jobs WHERE id = $1 RETURNING *)
       INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment) SELECT m.*, $2::smallint FROM moved m`,
      [id, segment],
    );
    return id;
  }
  const ring = async (cls: string) =>
    (await ctx.exec(`SELECT segment FROM awa.history_rings WHERE class = $1`, [cls]))[0].segment as number;
  const present = async (id: string) => (await ctx.exec('SELECT 1 FROM awa.job_history WHERE id = $1', [id])).length;
  const rotatedAgo = (cls: string, minutes: number) =>
    ctx.exec(`UPDATE awa.history_rings SET rotated_at = now() - $2::int * interval '1 minute' WHERE class = $1`, [
      cls,
      minutes,
    ]);

  it('moves a ring on once its segment was written for a width, sealing the one it leaves; keeps its jobs', async () => {
    const job = await archived(ctx.exec, 0);
    await rotatedAgo('completed', 5);
    expect(await task().run()).toBe(0);
    await rotatedAgo('completed', 11);
    expect(await task().run()).toBe(1);
    expect(await ring('completed')).toBe(1);
    const [sealed] = await ctx.exec(
      'SELECT sealed_at IS NOT NULL AS sealed FROM awa.history_segments WHERE segment = 0',
    );
    expect(sealed.sealed).toBe(true);
    expect(await present(job)).toBe(1);
    // Just rotated: not due again.
    expect(await task().run()).toBe(0);
  });

  it('empties the next segment only once it was sealed retention + width ago; until then the ring stays', async () => {
    await ctx.exec(`UPDATE awa.history_rings SET segment = 7 WHERE class = 'completed'`);
    await rotatedAgo('completed', 60);
    const old = await archived(ctx.exec, 0);
    await ctx.exec(`UPDATE awa.history_segments SET sealed_at = now() - interval '65 minutes' WHERE segment = 0`);
    expect(await task().run()).toBe(0);
    expect([await ring('completed'), await present(old)]).toEqual([7, 1]);
    await ctx.exec(`UPDATE awa.history_segments SET sealed_at = now() - interval '71 minutes' WHERE segment = 0`);
    expect(await task().run()).toBe(1);
    expect([await ring('completed'), await present(old)]).toEqual([0, 0]);
  });

  it('skips a ring whose next segment a reader holds, without an error, and rotates it once the reader is gone', async () => {
    const old = await archived(ctx.exec, 1);
    await rotatedAgo('completed', 11);
    const reader = new pg.Client({ connectionString: ctx.url });
    await reader.connect();
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM awa.all_jobs');
      expect(await task().run()).toBe(0);
      expect([await ring('completed'), await present(old)]).toEqual([0, 1]);
      await reader.query('COMMIT');
      expect(await task().run()).toBe(1);
      expect([await ring('completed'), await present(old)]).toEqual([1, 0]);
    } finally {
      await reader.end();
    }
  });

  it('warns once a reader held a ring for HELD_WARN_AFTER ticks in a row, with the server deadlock_timeout', async () => {
    await archived(ctx.exec, 1);
    await rotatedAgo('completed', 11);
    const warnings: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
    const reader = new pg.Client({ connectionString: ctx.url });
    await reader.connect();
    try {
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM awa.all_jobs');
      const held = () => warnings.filter((w) => w.includes('history rotation'));
      for (let tick = 1; tick < HELD_WARN_AFTER; tick++) expect(await task().run()).toBe(0);
      expect(held()).toEqual([]);
      expect(await task().run()).toBe(0);
      const [{ ms }] = await ctx.exec(sessionSql.deadlockTimeout.text);
      expect(held()).toEqual([
        AwaMessages.historyRotationHeld('completed', HELD_WARN_AFTER, ROTATION_LOCK_TIMEOUT_MS, ms),
      ]);
      expect(held()[0]).toContain(`gave up ${HELD_WARN_AFTER} ticks in a row`);
      // Once the ring moves, its count starts again: the next held tick is not warned of.
      await reader.query('COMMIT');
      expect(await task().run()).toBe(1);
      await rotatedAgo('completed', 11);
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM awa.all_jobs');
      expect(await task().run()).toBe(0);
      expect(held()).toHaveLength(1);
    } finally {
      spy.mockRestore();
      await reader.end();
    }
  });

  it('advises a lower deadlock_timeout only when it is not below the rotation lock timeout', () => {
    const advice = 'set it below 2000 ms';
    expect(AwaMessages.historyRotationHeld('failed', 3, 2_000, 1_000)).not.toContain(advice);
    expect(AwaMessages.historyRotationHeld('failed', 3, 2_000, undefined)).not.toContain(advice);
    expect(AwaMessages.historyRotationHeld('failed', 3, 2_000, 2_000)).toContain(
      `This server's deadlock_timeout is 2000 ms, and PostgreSQL cancels an autovacuum that blocks a lock only after it: ${advice}.`,
    );
  });

  it('never rotates a class kept forever (retention 0)', async () => {
    await rotatedAgo('failed', 100 * 60);
    await rotatedAgo('completed', 1);
    expect(await task().run()).toBe(0);
    expect(await ring('failed')).toBe(8);
  });
});
