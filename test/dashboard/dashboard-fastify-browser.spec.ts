import type { Browser } from 'playwright-core';
import { seedJob } from '../support/job-factory.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { describeInBrowser, launchChromium } from './browser.js';
import { startDashboardApp, type DashboardApp } from './dashboard-app.js';

describeInBrowser('dashboard on Fastify in headless Chromium', () => {
  let db: TestDatabase;
  let dash: DashboardApp;
  let browser: Browser;

  beforeAll(async () => {
    db = await createTestDatabase();
    dash = await startDashboardApp({ dbUrl: db.url, fastify: true, noWorkers: true, dashboard: { path: '/ops/awa' } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await db?.drop();
  });

  it('renders the overview and a job under a nested prefix, with its script and styles loaded', async () => {
    const exec = (text: string, values?: unknown[]) => queryOnce<any>(db.url, text, values);
    const id = await seedJob(exec, { queue: 'emails', kind: 'email.send', args: { to: 'ada@example.com' } });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(dash.url);
    await page.locator('tr[data-queue="emails"]').waitFor();
    expect(await page.evaluate('getComputedStyle(document.querySelector(".top")).position')).toBe('sticky');
    await page.getByRole('link', { name: 'emails' }).click();
    await page.getByRole('link', { name: `#${id}` }).click();
    await page.waitForURL(`${dash.url}/jobs/${id}`);
    await page.locator('#args').getByText('ada@example.com').waitFor();
    expect(errors).toEqual([]);
  });
});
