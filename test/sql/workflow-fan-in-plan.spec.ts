import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import * as workflowSql from '../../lib/sql/workflow.sql.js';
import { explainCompletion, examinedRows, PLAN_CASES } from '../support/completion-plan.js';
import { graphJob } from '../support/job-factory.js';
import { useSqlFixture } from './sql-fixture.js';

const CHILDREN = 3_000;
const BATCH = 10;

/**
 * A fan-in's children complete in batches, each taking its share off the parent's count: the batch
 * locks the parent by primary key, whatever the planner thinks of the tables. Without statistics (a
 * new graph, a server without autovacuum) it once chose a hash join over every job instead, and each
 * completion read the whole of awa.jobs: a fan-in ran at half the plain drain's rate. (The edges may
 * be read by a scan while their table is this small: the planner's choice, bounded by the graph.)
 */
describe('a fan-in child’s completion beside its siblings', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  let children: Array<{ id: string; runLease: string }>;

  beforeAll(async () => {
    client = await f.client();
    const ids = (
      await f.run(workflowSql.insertGraph, [
        JSON.stringify([...Array.from({ length: CHILDREN }, () => graphJob('child', 0)), graphJob('parent', CHILDREN)]),
        randomUUID(),
        JSON.stringify(
          Array.from({ length: CHILDREN }, (_, i) => ({
            dependent: CHILDREN,
            dependency: i,
            ref: `c${i}`,
            policy: 'cancel',
          })),
        ),
      ])
    ).map((r) => r.id);
    const running = ids.slice(0, BATCH);
    await f.sql(
      `WITH claimed AS (
         UPDATE awa.jobs SET state = 'running', attempt = 1, run_lease = 1 WHERE id = ANY($1::bigint[]) RETURNING id
       )
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id) SELECT id, 1, 'i' FROM claimed`,
      [running],
    );
    children = running.map((id) => ({ id, runLease: '1' }));
  });

  it.each(PLAN_CASES)(
    'reads its own jobs and the parent, not the siblings (%s plan, statistics taken: %s)',
    async (mode, analyzed) => {
      // Per child: its row, a few times over (the fence, the move); then the parent.
      const plan = await explainCompletion(client, children, mode, analyzed);
      expect(examinedRows(plan, ['jobs'])).toBeLessThan(BATCH * 4);
    },
  );
});
