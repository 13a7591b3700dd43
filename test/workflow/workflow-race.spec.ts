import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Steps {
  @JobHandler('race.step')
  async step(_job: Job) {
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 3)));
  }
}

/**
 * Two dependencies of one job finish at once in different transactions (two instances, many slots):
 * each one's fenced completion takes its share off the dependent's count, and none is lost.
 */
describe('workflow dependencies finishing at once in different transactions', () => {
  let db: TestDatabase;
  const apps: TestingModule[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 3; i++)
      apps.push(
        await startTestApp({
          url: db.url,
          providers: [Steps],
          awa: { queues: { default: { concurrency: 30, pollInterval: 100 } } },
        }),
      );
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  it('unblocks every diamond: no dependent is left waiting once its dependencies completed', async () => {
    const producer = apps[0]!.get(QueueProducer);
    const sql = apps[0]!.get(DataSource);
    for (let g = 0; g < 400; g++) {
      await producer.enqueueGraph([
        { ref: 'a', kind: 'race.step', args: {} },
        { ref: 'b', kind: 'race.step', args: {}, dependsOn: ['a'] },
        { ref: 'c', kind: 'race.step', args: {}, dependsOn: ['a'] },
        { ref: 'e', kind: 'race.step', args: {}, dependsOn: ['a'] },
        { ref: 'd', kind: 'race.step', args: {}, dependsOn: ['b', 'c', 'e'] },
      ]);
    }
    await waitFor(
      async () => {
        const [r] = await sql.query(
          `SELECT count(*) FILTER (WHERE state IN ('available', 'running'))::int AS busy,
                  count(*) FILTER (WHERE state = 'completed')::int AS done FROM awa.all_jobs`,
        );
        return r.busy === 0 && r.done > 0 ? r : null;
      },
      120_000,
      'the graphs to settle',
    );
    const stuck = await sql.query(
      `SELECT j.id, j.waiting_on FROM awa.jobs j WHERE j.state = 'waiting'
          AND NOT EXISTS (SELECT 1 FROM awa.job_dependencies e JOIN awa.all_jobs d ON d.id = e.dependency_id
                           WHERE e.dependent_id = j.id AND d.state <> 'completed')`,
    );
    expect(stuck).toEqual([]);
    const [{ n }] = await sql.query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed'`);
    expect(n).toBe(2_000);
  }, 180_000);
});
