import { QueueProducer } from 'nestjs-awa';
import { insertGraph } from '../../lib/sql/workflow.sql.js';
import { seedJob } from '../support/job-factory.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { call, handlerControl, startDashboardApp, type DashboardApp } from './dashboard-app.js';

describe('dashboard JSON API (Express)', () => {
  let db: TestDatabase;
  let dash: DashboardApp;
  const exec = (text: string, values?: unknown[]) => queryOnce<any>(db.url, text, values);

  beforeAll(async () => {
    db = await createTestDatabase();
    dash = await startDashboardApp({ dbUrl: db.url, noWorkers: true });
  });
  afterAll(async () => {
    await dash?.close();
    await db?.drop();
  });

  it('lists every queue with its counts by state, pause state and oldest available job', async () => {
    await seedJob(exec, { queue: 'emails', kind: 'email.send', state: 'available', runAtMs: -60_000 });
    await seedJob(exec, { queue: 'emails', kind: 'email.send', state: 'failed', finalizedAtMs: -1_000 });
    await exec(`INSERT INTO awa.queues (name, paused_at) VALUES ('frozen', now())`);
    const { status, body } = await call(`${dash.url}/api/queues`);
    expect(status).toBe(200);
    const emails = body.find((q: any) => q.name === 'emails');
    expect(emails.counts).toMatchObject({ available: 1, failed: 1, running: 0 });
    expect(emails.paused).toBe(false);
    expect(emails.oldestAvailableAgeMs).toBeGreaterThanOrEqual(59_000);
    expect(body.find((q: any) => q.name === 'frozen')).toMatchObject({ paused: true });
    expect(body.map((q: any) => q.name)).toEqual(expect.arrayContaining(['default', 'reports']));
  });

  it('counts completed and failed jobs per minute over the last hour', async () => {
    await seedJob(exec, { queue: 'emails', state: 'completed', finalizedAtMs: -5_000 });
    await seedJob(exec, { queue: 'emails', state: 'completed', finalizedAtMs: -2 * 3_600_000 });
    const { body } = await call(`${dash.url}/api/throughput`);
    expect(body.minutes).toHaveLength(60);
    const sum = (k: 'completed' | 'failed') => body.minutes.reduce((a: number, m: any) => a + m[k], 0);
    expect([sum('completed'), sum('failed')]).toEqual([1, 1]);
  });

  it('filters jobs by state, queue, kind, tags, args containment and text, newest first', async () => {
    await exec('DELETE FROM awa.jobs; DELETE FROM awa.job_history');
    const a = await seedJob(exec, { queue: 'q1', kind: 'k.a', args: { userId: 42, email: 'ada@example.com' } });
    const b = await seedJob(exec, { queue: 'q1', kind: 'k.b', args: { userId: 7 }, state: 'failed' });
    const c = await seedJob(exec, { queue: 'q2', kind: 'k.a', args: { userId: 42 } });
    await exec(`UPDATE awa.jobs SET tags = '{vip,eu}' WHERE id = $1`, [c]);
    const ids = async (query: string) => (await call(`${dash.url}/api/jobs?${query}`)).body.jobs.map((j: any) => j.id);
    expect(await ids('')).toEqual([c, b, a]);
    expect(await ids('state=failed')).toEqual([b]);
    expect(await ids('state=available,failed&queue=q1')).toEqual([b, a]);
    expect(await ids('kind=k.a')).toEqual([c, a]);
    expect(await ids('tag=vip&tag=eu')).toEqual([c]);
    expect(await ids(`args=${encodeURIComponent('{"userId": 42}')}`)).toEqual([c, a]);
    expect(await ids('search=ADA@example')).toEqual([a]);
    expect((await call(`${dash.url}/api/jobs/count?kind=k.a`)).body).toEqual({
      count: 2,
      capped: false,
      bounded: false,
    });
  });

  it('pages with a keyset cursor: every job once, in order, and no next after the last page', async () => {
    await exec('DELETE FROM awa.jobs; DELETE FROM awa.job_history');
    await exec(`INSERT INTO awa.jobs (kind) SELECT 'page' FROM generate_series(1, 7)`);
    const seen: string[] = [];
    let after = '';
    for (let i = 0; i < 5 && after !== null; i++) {
      const { body } = await call(`${dash.url}/api/jobs?limit=3${after ? `&after=${after}` : ''}`);
      seen.push(...body.jobs.map((j: any) => j.id));
      after = body.next;
    }
    expect(after).toBeNull();
    expect(seen.map(Number)).toEqual([...seen.map(Number)].sort((x, y) => y - x));
    expect(new Set(seen).size).toBe(7);
  });

  it('shows a job with its attempts, errors and current lease', async () => {
    const id = await seedJob(exec, { state: 'running', attempt: 2, runLease: 5, args: { x: 1 } });
    await exec(
      `UPDATE awa.jobs SET errors = '[{"at":"2026-01-01T00:00:00Z","attempt":1,"error":"boom"}]',
              progress = '{"done":3}'
        WHERE id = $1`,
      [id],
    );
    await exec(
      `INSERT INTO awa.active_leases (job_id, run_lease, instance_id, deadline_at)
       VALUES ($1, 5, 'inst-1', now() + interval '1 minute')`,
      [id],
    );
    const { status, body } = await call(`${dash.url}/api/jobs/${id}`);
    expect(status).toBe(200);
    expect(body.job).toMatchObject({ id, state: 'running', attempt: 2, args: { x: 1 }, progress: { done: 3 } });
    expect(body.job.errors).toEqual([{ at: '2026-01-01T00:00:00Z', attempt: 1, error: 'boom' }]);
    expect(body.lease).toMatchObject({ instance_id: 'inst-1', run_lease: '5' });
    expect(body.lease.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
  });

  it("gives a workflow job's dependencies and dependents with the job", async () => {
    const [{ id: first }, { id: second }] = await exec(insertGraph.text, [
      JSON.stringify(
        ['wf.a', 'wf.b'].map((kind, i) => ({
          kind,
          queue: 'default',
          args: {},
          priority: 0,
          max_attempts: 1,
          waiting_on: i,
        })),
      ),
      '00000000-0000-4000-8000-000000000001',
      JSON.stringify([{ dependent: 1, dependency: 0, ref: 'a', policy: 'cancel' }]),
    ]);
    const { body } = await call(`${dash.url}/api/jobs/${second}`);
    expect(body.job).toMatchObject({ state: 'waiting', workflowId: '00000000-0000-4000-8000-000000000001' });
    expect(body.links).toEqual([
      { side: 'dependency', id: first, ref: 'a', policy: 'cancel', kind: 'wf.a', state: 'available' },
    ]);
    expect((await call(`${dash.url}/api/jobs/${first}`)).body.links).toMatchObject([{ side: 'dependent', id: second }]);
  });

  it('lists the live instance as the leader, with its lease count', async () => {
    const list = await waitFor(
      async () => {
        const { body } = await call(`${dash.url}/api/instances`);
        return body.length === 1 && body[0].leader ? body : null;
      },
      15_000,
      'the instance to lead',
    );
    expect(list[0]).toMatchObject({ leader: true, leases: 0 });
    expect(list[0].heartbeat_age_ms).toBeGreaterThanOrEqual(0);
  });

  it('lists each durable-event group with its position and lag', async () => {
    await exec(
      `INSERT INTO awa.event_subscriptions ("group", event) VALUES ('billing', 'completed');
       INSERT INTO awa.event_group_positions ("group", position_tx) VALUES ('billing', '0');
       INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt, at)
       VALUES (1, 'completed', 'k', 'default', 'completed', 1, now() - interval '1 minute')`,
    );
    const { status, body } = await call(`${dash.url}/api/event-groups`);
    expect(status).toBe(200);
    expect(body).toEqual([
      expect.objectContaining({ group: 'billing', holder: null, failures: 0, lastError: null, lagEvents: 1 }),
    ]);
    expect(body[0].lagMs).toBeGreaterThanOrEqual(59_000);
  });

  it.each([
    ['/api/jobs/abc', 'invalid `id`'],
    ['/api/jobs/99999999999999999999', 'invalid `id`'],
    ['/api/jobs?state=sleeping', 'invalid `state`'],
    ['/api/jobs?args=%7Bnot-json', 'invalid `args`'],
    ['/api/jobs?args=%5B1%5D', 'invalid `args`'],
    ['/api/jobs?limit=0', 'invalid `limit`'],
    ['/api/jobs?after=-1', 'invalid `after`'],
    ['/api/jobs?search=a%00b', 'invalid `search`'],
  ])('answers 400 with a clear message, never a database error: %s', async (path, message) => {
    const { status, body } = await call(`${dash.url}${path}`);
    expect(status).toBe(400);
    expect(body.message).toContain(message);
  });

  it('answers 404 for an unknown job', async () => {
    const { status, body } = await call(`${dash.url}/api/jobs/123456789`);
    expect([status, body.message]).toEqual([404, 'job 123456789 not found']);
  });

  it('refuses an action without a JSON body, and a bulk action without ids or filter', async () => {
    const form = await call(`${dash.url}/api/queues/emails/pause`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    const empty = await call(`${dash.url}/api/jobs/bulk`, { body: { action: 'retry' } });
    expect([empty.status, empty.body.message]).toEqual([
      400,
      'invalid `body`: needs either `ids` or `filter`, not both',
    ]);
    const all = await call(`${dash.url}/api/jobs/bulk`, { body: { action: 'retry', filter: {} } });
    expect(all.status).toBe(400);
    expect(all.body.message).toContain('send `all: true`');
  });

  it('serves the pages and their assets from memory, under the path prefix', async () => {
    for (const page of ['', '/jobs', '/jobs/1', '/schedules', '/instances']) {
      const { status, body, type } = await call(`${dash.url}${page}`);
      expect([page, status, type]).toEqual([page, 200, 'text/html; charset=utf-8']);
      expect(body).toContain('<script src="/awa/assets/dashboard.js" defer></script>');
      expect(body).not.toMatch(/https?:\/\//);
    }
    const js = await call(`${dash.url}/assets/dashboard.js`);
    expect([js.status, js.type]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect(() => new Function(js.body)).not.toThrow();
    expect((await call(`${dash.url}/assets/dashboard.css`)).type).toBe('text/css; charset=utf-8');
  });

  it('gives a workflow with its jobs and edges, and serves its page', async () => {
    const { workflowId, ids } = await dash.app.get(QueueProducer).enqueueGraph([
      { ref: 'a', kind: 'wf.a', args: {} },
      { ref: 'b', kind: 'wf.b', args: {}, dependsOn: ['a'], onDependencyFailure: 'ignore' },
    ]);
    const { status, body } = await call(`${dash.url}/api/workflows/${workflowId}`);
    expect([status, body.id, body.state, body.jobs]).toEqual([200, workflowId, 'running', 2]);
    expect(body.jobList.map((j: any) => [j.id, j.state, j.waitingOn])).toEqual([
      [ids.a, 'available', 0],
      [ids.b, 'waiting', 1],
    ]);
    expect(body.edges).toEqual([{ dependentId: ids.b, dependencyId: ids.a, ref: 'a', policy: 'ignore', state: null }]);
    const page = await call(`${dash.url}/workflows/${workflowId}`);
    expect([page.status, page.type]).toEqual([200, 'text/html; charset=utf-8']);
    expect(page.body).toContain(`data-page="workflow"`);
    expect(page.body).toContain(`data-workflow-id="${workflowId}"`);
    expect(page.body).toContain(`<title>Workflow ${workflowId} · awa</title>`);
  });

  it('answers 404 for an unknown workflow', async () => {
    const id = '00000000-0000-4000-8000-00000000abcd';
    const { status, body } = await call(`${dash.url}/api/workflows/${id}`);
    expect([status, body.message]).toEqual([404, `workflow ${id} not found`]);
  });

  it.each(['/api/workflows/42', '/api/workflows/not-a-uuid', '/workflows/1%27%3B'])(
    'refuses a workflow id that is not a UUID with 400, before the database: %s',
    async (path) => {
      const { status, body } = await call(`${dash.url}${path}`);
      expect([status, body.message]).toEqual([400, 'invalid `id`: must be a workflow id (a UUID)']);
    },
  );

  it('keeps handlerControl importable for the browser spec', () => {
    expect(handlerControl.failing).toBe(true);
  });
});
