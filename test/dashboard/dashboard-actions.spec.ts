import type { Browser, Page } from 'playwright-core';
import * as awa from 'nestjs-awa';
import { QueueProducer } from 'nestjs-awa';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, launchChromium } from './browser.js';
import { handlerControl, startDashboardApp, type DashboardApp } from './dashboard-app.js';

/** The dashboard's actions call QueueAdmin; until the package has it, they answer 503 and this file skips. */
const hasQueueAdmin = 'QueueAdmin' in awa;
if (!hasQueueAdmin) console.warn('skipping the dashboard action tests: nestjs-awa has no QueueAdmin yet');

/** The actions, clicked in headless Chromium, against real workers and the real QueueAdmin. */
(hasQueueAdmin ? describeInBrowser : describe.skip)('dashboard actions in headless Chromium', () => {
  let db: TestDatabase;
  let dash: DashboardApp;
  let browser: Browser;
  let page: Page;
  let producer: QueueProducer;
  const sql = (text: string, values?: unknown[]) => queryOnce<any>(db.url, text, values);
  const state = async (id: string) => (await sql('SELECT state FROM awa.jobs WHERE id = $1', [id]))[0]?.state;
  const states = async (ids: string[]) =>
    (await sql('SELECT state FROM awa.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids])).map((r) => r.state);
  const later = () => ({ runAt: new Date(Date.now() + 3_600_000) });

  beforeAll(async () => {
    db = await createTestDatabase();
    dash = await startDashboardApp({ dbUrl: db.url });
    producer = dash.app.get(QueueProducer);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('pageerror', (error) => {
      throw error;
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await db?.drop();
  });

  it('retries a failed job from its page, and the job then completes', async () => {
    handlerControl.failing = true;
    const { id } = await producer.enqueue('report.flaky', { reportId: 'R1' });
    await waitFor(async () => (await state(id)) === 'failed', 15_000, 'the report to fail');
    handlerControl.failing = false;
    await page.goto(`${dash.url}/jobs/${id}`);
    await page.locator('#attempts li').first().waitFor();
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.getByText('retry: retried').waitFor();
    await waitFor(async () => (await state(id)) === 'completed', 15_000, 'the retried report to complete');
    await page.locator('.state-completed').first().waitFor();
    expect(await page.locator('#attempts').innerText()).toContain('printer on fire');
  });

  it('cancels every job matching the filter, after a confirmation with their count', async () => {
    const matching = await Promise.all([1, 2, 3, 4].map((n) => producer.enqueue('email.send', { n }, later())));
    const other = await producer.enqueue('report.flaky', { n: 5 }, later());
    await page.goto(`${dash.url}/jobs?state=scheduled&queue=emails`);
    await waitFor(async () => (await page.locator('tr[data-job-id]').count()) === 4, 10_000, 'four scheduled emails');
    await page.locator('#all-matching').check();
    await page.locator('button[data-bulk="cancel"]').click();
    await page.locator('#confirm:not([hidden])').waitFor();
    expect(await page.locator('#confirm-text').innerText()).toBe('Cancel 4 job(s) matching the filter?');
    await page.locator('#confirm-ok').click();
    await page.getByText('cancel: 4 job(s)').waitFor();
    expect(await states(matching.map((j) => j.id))).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(await state(other.id)).toBe('scheduled');
  });

  it('deletes the selected jobs only, and nothing when the confirmation is cancelled', async () => {
    const jobs = await Promise.all([1, 2, 3].map((n) => producer.enqueue('email.send', { pick: n }, later())));
    const ids = jobs.map((j) => j.id);
    await page.goto(`${dash.url}/jobs?search=pick`);
    await waitFor(async () => (await page.locator('tr[data-job-id]').count()) === 3, 10_000, 'three jobs');
    await page.getByLabel(`select job ${ids[0]}`).check();
    await page.getByLabel(`select job ${ids[2]}`).check();
    await page.locator('button[data-bulk="delete"]').click();
    expect(await page.locator('#confirm-text').innerText()).toBe('Delete 2 selected job(s)?');
    await page.locator('#confirm-cancel').click();
    expect(await states(ids)).toEqual(['scheduled', 'scheduled', 'scheduled']);
    await page.locator('button[data-bulk="delete"]').click();
    await page.locator('#confirm-ok').click();
    await page.getByText('delete: 2 deleted, 0 cancelled job(s)').waitFor();
    expect(await states(ids)).toEqual(['scheduled']);
    await waitFor(async () => (await page.locator('tr[data-job-id]').count()) === 1, 10_000, 'one job left');
  });

  it('pauses a queue from the overview: its workers stop claiming, and run its jobs once resumed', async () => {
    await page.goto(dash.url);
    const emails = page.locator('tr[data-queue="emails"]');
    await emails.getByRole('button', { name: 'Pause' }).click();
    await emails.getByText('paused', { exact: true }).waitFor();
    const held = await producer.enqueue('email.send', { to: 'held@example.com' });
    // The workers still run other queues: a report runs while the email waits.
    const report = await producer.enqueue('report.flaky', { reportId: 'while-paused' });
    await waitFor(async () => ['completed', 'failed'].includes(await state(report.id)), 15_000, 'a report to run');
    expect(await state(held.id)).toBe('available');
    await emails.getByRole('button', { name: 'Resume' }).click();
    await emails.getByText('active', { exact: true }).waitFor();
    await waitFor(async () => (await state(held.id)) === 'completed', 15_000, 'the held email to be sent');
  });
});
