import { existsSync } from 'node:fs';
import { AwaErrorCodes, PRIORITY_MAX, PRIORITY_MIN } from 'nestjs-awa';
import pg from 'pg';
import { AwaMessages } from '../../lib/awa.messages.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/test-app.js';
import { SampleProcess } from './sample-process.js';

/** Generous: a loaded 2-core machine boots Nest and runs migrations slowly. */
const TIMEOUT = 120_000;

interface JobView {
  id: string;
  kind: string;
  queue: string;
  state: string;
  attempt: number;
  maxAttempts: number;
  errors: Array<{ attempt: number; error: string }>;
}

/** The built sample app, run as a user runs it, driven over HTTP. */
describe('the sample app', () => {
  let db: TestDatabase;
  let app: SampleProcess;

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${app.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { id: string; reportId?: string; message?: string } };
  };
  const getJob = async (id: string) => {
    const res = await fetch(`${app.baseUrl}/jobs/${id}`);
    return { status: res.status, body: (await res.json()) as JobView };
  };
  const jobInState = (id: string, state: string) =>
    waitFor(
      async () => {
        const { body } = await getJob(id);
        return body.state === state ? body : null;
      },
      60_000,
      `job ${id} to be ${state}`,
    );
  const query = <T>(sql: string, params: unknown[] = []) => queryOnce<T>(db.url, sql, params);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await SampleProcess.start({ DATABASE_URL: db.url });
  }, TIMEOUT);
  afterAll(async () => {
    app?.kill('SIGKILL');
    await app?.exited;
    await db?.drop();
  }, TIMEOUT);

  it(
    'completes an email job enqueued over HTTP',
    async () => {
      const created = await post('/jobs/email', { to: 'ada@example.com', subject: 'hello' });
      expect(created.status).toBe(202);
      expect(created.body).toEqual({ id: expect.stringMatching(/^\d+$/) });

      const done = await jobInState(created.body.id, 'completed');
      expect(done).toMatchObject({ kind: 'email.send', queue: 'emails', attempt: 1, errors: [] });
    },
    TIMEOUT,
  );

  it(
    'commits a report row and its job together, and the handler renders it',
    async () => {
      const created = await post('/jobs/report', { title: 'Q3', pages: 2 });
      expect(created.status).toBe(202);
      const { id, reportId } = created.body;

      const done = await jobInState(id, 'completed');
      expect(done).toMatchObject({ kind: 'report.render', queue: 'reports', attempt: 1 });
      const [report] = await query<{ status: string }>('SELECT status FROM sample_reports WHERE id = $1', [reportId]);
      expect(report).toEqual({ status: 'rendered' });
    },
    TIMEOUT,
  );

  it(
    'runs the document workflow: every page, then the merge, then the mail',
    async () => {
      const res = await fetch(`${app.baseUrl}/workflows/document`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Q3', to: 'ada@example.com', pages: 3 }),
      });
      expect(res.status).toBe(202);
      const { workflowId, ids } = (await res.json()) as { workflowId: string; ids: Record<string, string> };
      expect(Object.keys(ids)).toEqual(['page-1', 'page-2', 'page-3', 'merge', 'mail']);
      await jobInState(ids.mail!, 'completed');
      const view = (await (await fetch(`${app.baseUrl}/workflows/${workflowId}`)).json()) as {
        state: string;
        edges: unknown[];
      };
      expect(view.state).toBe('completed');
      expect(view.edges).toHaveLength(4);
      const [merge] = await query<{ output: unknown }>('SELECT output FROM awa.all_jobs WHERE id = $1', [ids.merge]);
      expect(merge!.output).toEqual({ pages: 3, bytes: 6_000 });
    },
    TIMEOUT,
  );

  it(
    'bills a rendered report once, from the billing group of durable events',
    async () => {
      const created = await post('/jobs/report', { title: 'billed', pages: 1 });
      const { id } = created.body;
      await jobInState(id, 'completed');
      const invoices = await waitFor(
        async () => {
          const rows = await query<{ kind: string }>('SELECT kind FROM sample_invoices WHERE job_id = $1', [id]);
          return rows.length > 0 ? rows : undefined;
        },
        30_000,
        'the invoice',
      );
      expect(invoices).toEqual([{ kind: 'report.render' }]);
    },
    TIMEOUT,
  );

  it(
    'shows the error of each failed attempt',
    async () => {
      const created = await post('/jobs/email', { to: 'nobody@fail.test', subject: 'bounce' });
      const failed = await jobInState(created.body.id, 'failed');
      expect(failed.attempt).toBe(3);
      expect(failed.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
      expect(failed.errors[0]!.error).toContain('mailbox nobody@fail.test unavailable');
    },
    TIMEOUT,
  );

  it(
    'answers 400 with the library message, code and field for bad input, and rolls the report row back',
    async () => {
      const badPriority = await post('/jobs/email', { to: 'ada@example.com', subject: 'hi', priority: 99_999 });
      expect(badPriority.status).toBe(400);
      expect(badPriority.body).toMatchObject({
        code: AwaErrorCodes.enqueueValidation,
        field: 'priority',
        message: AwaMessages.enqueuePriorityInvalid(PRIORITY_MIN, PRIORITY_MAX),
      });

      const badRunAt = await post('/jobs/report', { title: 'never', runAt: 'not a date' });
      expect(badRunAt.status).toBe(400);
      expect(badRunAt.body).toMatchObject({
        code: AwaErrorCodes.enqueueValidation,
        field: 'runAt',
        message: AwaMessages.enqueueRunAtInvalid(),
      });
      expect(await query('SELECT 1 FROM sample_reports WHERE title = $1', ['never'])).toEqual([]);

      const missing = await post('/jobs/email', { subject: 'no recipient' });
      expect(missing.status).toBe(400);
    },
    TIMEOUT,
  );

  it(
    'answers 404 for an unknown job',
    async () => {
      expect((await getJob('987654321')).status).toBe(404);
      expect((await getJob('not-an-id')).status).toBe(404);
    },
    TIMEOUT,
  );

  it(
    'stops by itself on SIGTERM',
    async () => {
      app.kill('SIGTERM');
      const { code, signal } = await app.exited;
      // Nest re-raises the signal once it has closed the app.
      expect(code === 0 || signal === 'SIGTERM').toBe(true);
      expect(app.output).not.toMatch(/\bERROR\b/);
    },
    TIMEOUT,
  );
});

/** `npm run sample` on a fresh clone: no DATABASE_URL, so the sample runs its own PostgreSQL. */
describe('the sample app without DATABASE_URL', () => {
  let app: SampleProcess;

  beforeAll(async () => {
    app = await SampleProcess.start({ DATABASE_URL: undefined });
  }, TIMEOUT);
  afterAll(async () => {
    app?.kill('SIGKILL'); // its embedded server stops too: it watches its stdin pipe
    await app?.exited;
  }, TIMEOUT);

  it(
    'completes a job, and on Ctrl-C finishes a running job, then stops its embedded PostgreSQL',
    async () => {
      const [, port, directory] = /embedded PostgreSQL on port (\d+), data in (\S+)/.exec(app.output) ?? [];
      expect(port).toBeDefined();
      expect(existsSync(directory!)).toBe(true);

      const post = (path: string, body: unknown) =>
        fetch(`${app.baseUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then((res) => res.json() as Promise<{ id: string }>);
      const state = (id: string) =>
        fetch(`${app.baseUrl}/jobs/${id}`).then(async (res) => ((await res.json()) as JobView).state);

      const email = await post('/jobs/email', { to: 'ada@example.com', subject: 'hello' });
      await waitFor(async () => (await state(email.id)) === 'completed', 60_000, 'the email job');

      // A report of 8 pages takes 2 s; interrupt it once it runs.
      const report = await post('/jobs/report', { title: 'interrupted', pages: 8 });
      await waitFor(async () => (await state(report.id)) === 'running', 60_000, 'the report job to run');
      app.interrupt();
      const { code, signal } = await app.exited;
      expect(code === 0 || signal === 'SIGINT').toBe(true);
      expect(app.output).toMatch(/rendered report "interrupted"/);
      expect(app.output).not.toMatch(/\b(ERROR|WARN)\b/);

      expect(existsSync(directory!)).toBe(false);
      const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres` });
      const refused = await client.connect().then(
        () => client.end().then(() => false),
        () => true,
      );
      expect(refused).toBe(true);
    },
    TIMEOUT,
  );
});
