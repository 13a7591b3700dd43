import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { seedJob } from '../support/job-factory.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { describeInBrowser, launchChromium } from './chromium.js';
import { startDashboardApp, type DashboardApp } from './dashboard-app.js';

/** What a page's fetch got: the status, or the network error of a refused (CORS) call. */
type Outcome = { status: number } | { error: string };

/** Calls the dashboard's API from the page's own origin, with the user's cookies, as an attacker's script would. */
const callFrom = (page: Page, url: string, method: string, body?: unknown) =>
  page.evaluate(
    async ({ url, method, body }): Promise<Outcome> => {
      try {
        const res = await fetch(url, {
          method,
          credentials: 'include',
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status };
      } catch (error) {
        return { error: String(error) };
      }
    },
    { url, method, body },
  );

/**
 * A page of another origin (another port of 127.0.0.1) calls the dashboard's actions with fetch and
 * a JSON body, while the host app's CORS lets every origin in with credentials: each is refused and
 * nothing changes; the same calls from the dashboard's own page still work.
 */
describeInBrowser('dashboard actions from another origin in headless Chromium', () => {
  let db: TestDatabase;
  let dash: DashboardApp;
  let other: Server;
  let otherUrl: string;
  let browser: Browser;
  let page: Page;
  const sql = (text: string, values?: unknown[]) => queryOnce<any>(db.url, text, values);
  const exec = (text: string, values?: unknown[]) => sql(text, values);

  beforeAll(async () => {
    db = await createTestDatabase();
    dash = await startDashboardApp({ dbUrl: db.url, noWorkers: true, corsWideOpen: true });
    other = createServer((_req, res) => res.end('<!doctype html><title>elsewhere</title><p>a site the user visits'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`;
    browser = await launchChromium();
    page = await browser.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => other?.close(resolve));
    await dash?.close();
    await db?.drop();
  });

  it('refuses DELETE, retry and queue pause from another port of the host, with CORS wide open', async () => {
    const doomed = await seedJob(exec, { state: 'scheduled', runAtMs: 3_600_000 });
    const failed = await seedJob(exec, { state: 'failed', attempt: 1, maxAttempts: 1, finalizedAtMs: -1000 });
    const api = `${dash.url}/api`;
    await page.goto(otherUrl);

    const outcomes = [
      await callFrom(page, `${api}/jobs/${doomed}`, 'DELETE'),
      await callFrom(page, `${api}/jobs/${failed}/retry`, 'POST', {}),
      await callFrom(page, `${api}/queues/default/pause`, 'POST', {}),
      await callFrom(page, `${api}/jobs/bulk`, 'POST', { action: 'delete', filter: {}, all: true }),
    ];

    expect(outcomes).toEqual([{ status: 403 }, { status: 403 }, { status: 403 }, { status: 403 }]);
    const jobs = await sql('SELECT id::text, state FROM awa.all_jobs ORDER BY id');
    expect(jobs).toEqual([
      { id: doomed, state: 'scheduled' },
      { id: failed, state: 'failed' },
    ]);
    expect(await sql('SELECT name FROM awa.queues WHERE paused_at IS NOT NULL')).toEqual([]);
  });

  it('still lets the dashboard page itself act, with the same calls', async () => {
    const doomed = await seedJob(exec, { state: 'scheduled', runAtMs: 3_600_000 });
    const failed = await seedJob(exec, { state: 'failed', attempt: 1, maxAttempts: 1, finalizedAtMs: -1000 });
    const api = `${dash.url}/api`;
    await page.goto(dash.url);

    const outcomes = [
      await callFrom(page, `${api}/jobs/${doomed}`, 'DELETE'),
      await callFrom(page, `${api}/jobs/${failed}/retry`, 'POST', {}),
      await callFrom(page, `${api}/queues/default/pause`, 'POST', {}),
    ];

    expect(outcomes).toEqual([{ status: 200 }, { status: 200 }, { status: 200 }]);
    expect(await sql('SELECT state FROM awa.all_jobs WHERE id = ANY ($1::bigint[])', [[doomed, failed]])).toEqual([
      { state: 'available' },
    ]);
    expect(await sql('SELECT name FROM awa.queues WHERE paused_at IS NOT NULL')).toEqual([{ name: 'default' }]);
  });
});
