import { AwaOptionError } from 'nestjs-awa';
import { AwaDashboardModule } from 'nestjs-awa/dashboard';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { caughtSync } from '../support/caught.js';
import { AdminHeaderGuard, call, startDashboardApp, warningLogger, type DashboardApp } from './dashboard-app.js';

const ACTIONS: [string, string, unknown][] = [
  ['POST', '/api/queues/emails/pause', {}],
  ['POST', '/api/queues/emails/resume', {}],
  ['POST', '/api/jobs/1/retry', {}],
  ['POST', '/api/jobs/1/cancel', {}],
  ['DELETE', '/api/jobs/1', undefined],
  ['POST', '/api/jobs/bulk', { action: 'cancel', filter: { queue: 'emails' } }],
  ['POST', '/api/schedules/nightly/run', {}],
];

describe.each([
  ['Express', false],
  ['Fastify', true],
])('dashboard access on %s', (_platform, fastify) => {
  let db: TestDatabase;
  const apps: DashboardApp[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });
  const start = async (options: Omit<Parameters<typeof startDashboardApp>[0], 'dbUrl' | 'fastify'>) => {
    const app = await startDashboardApp({ dbUrl: db.url, fastify, noWorkers: true, ...options });
    apps.push(app);
    return app;
  };

  it('serves pages and the API under a nested path prefix', async () => {
    const dash = await start({ dashboard: { path: '/ops/queue-ui/' } });
    expect(dash.url).toMatch(/\/ops\/queue-ui$/);
    const page = await call(`${dash.url}/jobs?state=failed`);
    expect([page.status, page.type]).toEqual([200, 'text/html; charset=utf-8']);
    expect(page.body).toContain('href="/ops/queue-ui/assets/dashboard.css"');
    expect(page.body).toContain('value="failed" checked');
    expect((await call(`${dash.url}/api/jobs?state=failed`)).body).toEqual({ jobs: [], next: null, bounded: false });
    expect((await call(`${dash.url}/api/jobs?state=nope`)).status).toBe(400);
    expect((await call(`${dash.url}/assets/dashboard.js`)).type).toBe('text/javascript; charset=utf-8');
  });

  it('puts every page, asset and API call behind the guard: 403 without it, 200 with it', async () => {
    const logger = warningLogger();
    const dash = await start({ dashboard: { path: '/guarded', guard: AdminHeaderGuard }, logger });
    for (const path of ['', '/jobs', '/assets/dashboard.js', '/api/queues', '/api/jobs/1']) {
      expect([path, (await call(`${dash.url}${path}`)).status]).toEqual([path, 403]);
    }
    const ok = await call(`${dash.url}/api/queues`, { headers: { 'x-admin': 'yes' } });
    expect(ok.status).toBe(200);
    expect(logger.warnings.filter((w) => w.includes('NO guard'))).toEqual([]);
  });

  it('warns loudly at boot when the dashboard has no guard', async () => {
    const logger = warningLogger();
    await start({ dashboard: { path: '/open' }, logger });
    expect(logger.warnings.filter((w) => w.includes('/open has NO guard'))).toHaveLength(1);
  });

  it('read-only: hides the actions from the pages and refuses every action with 403', async () => {
    const dash = await start({ dashboard: { path: '/ro', readOnly: true } });
    const page = await call(dash.url);
    expect(page.body).toContain('data-read-only="true"');
    expect(page.body).toContain('data-actions="false"');
    for (const [method, path, body] of ACTIONS) {
      const res = await call(`${dash.url}${path}`, { method, body });
      expect([path, res.status, res.body.message]).toEqual([
        path,
        403,
        'the dashboard is read-only (option readOnly): actions are refused',
      ]);
    }
  });
});

describe('AwaDashboardModule.forRoot options', () => {
  it.each([
    [{ path: 'awa' }, 'dashboard.path'],
    [{ path: '/awa/:id' }, 'dashboard.path'],
    [{ guard: 'AdminGuard' }, 'dashboard.guard'],
    [{ readOnly: 'yes' }, 'dashboard.readOnly'],
    [{ refreshInterval: 5 }, 'dashboard.refreshInterval'],
    [{ pth: '/awa' }, 'dashboard.pth'],
  ])('refuses %j, naming the option', (options, path) => {
    const error = caughtSync(() => AwaDashboardModule.forRoot(options as never));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect((error as AwaOptionError).path).toBe(path);
  });
});
