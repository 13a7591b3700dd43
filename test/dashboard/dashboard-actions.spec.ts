import * as awa from 'nestjs-awa';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';
import { handlerControl } from './dashboard-app.js';

/** The dashboard's actions call QueueAdmin; until the package has it, they answer 503 and this file skips. */
const hasQueueAdmin = 'QueueAdmin' in awa;
if (!hasQueueAdmin) console.warn('skipping the dashboard action tests: nestjs-awa has no QueueAdmin yet');

/** The actions, clicked in headless Chromium, against real workers and the real QueueAdmin. */
(hasQueueAdmin ? describeInBrowser : describe.skip)('dashboard actions in headless Chromium', () => {
  const f = useDashboardInBrowser();
  const { sql, state } = f;
  const states = async (ids: string[]) =>
    (await sql('SELECT state FROM awa.all_jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids])).map((r) => r.state);
  const later = () => ({ runAt: new Date(Date.now() + 3_600_000) });

  it('retries a failed job from its page, and the job then completes', async () => {
    handlerControl.failing = true;
    const { id } = await f.producer.enqueue('report.flaky', { reportId: 'R1' });
    await waitFor(async () => (await state(id)) === 'failed', 15_000, 'the report to fail');
    handlerControl.failing = false;
    await f.page.goto(`${f.dash.url}/jobs/${id}`);
    await f.page.locator('#attempts li').first().waitFor();
    await f.page.getByRole('button', { name: 'Retry' }).click();
    await f.page.getByText('retry: retried').waitFor();
    await waitFor(async () => (await state(id)) === 'completed', 15_000, 'the retried report to complete');
    await f.page.locator('.state-completed').first().waitFor();
    expect(await f.page.locator('#attempts').innerText()).toContain('printer on fire');
  });

  it('cancels every job matching the filter, after a confirmation with their count', async () => {
    const matching = await Promise.all([1, 2, 3, 4].map((n) => f.producer.enqueue('email.send', { n }, later())));
    const other = await f.producer.enqueue('report.flaky', { n: 5 }, later());
    await f.page.goto(`${f.dash.url}/jobs?state=scheduled&queue=emails`);
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 4, 10_000, 'four scheduled emails');
    await f.page.locator('#all-matching').check();
    await f.page.locator('button[data-bulk="cancel"]').click();
    await f.page.locator('#confirm:not([hidden])').waitFor();
    expect(await f.page.locator('#confirm-text').innerText()).toBe('Cancel 4 job(s) matching the filter?');
    await f.page.locator('#confirm-ok').click();
    await f.page.getByText('cancel: 4 job(s)').waitFor();
    expect(await states(matching.map((j) => j.id))).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(await state(other.id)).toBe('scheduled');
  });

  it('deletes the selected jobs only, and nothing when the confirmation is cancelled', async () => {
    const jobs = await Promise.all([1, 2, 3].map((n) => f.producer.enqueue('email.send', { pick: n }, later())));
    const ids = jobs.map((j) => j.id);
    await f.page.goto(`${f.dash.url}/jobs?search=pick`);
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 3, 10_000, 'three jobs');
    await f.page.getByLabel(`select job ${ids[0]}`).check();
    await f.page.getByLabel(`select job ${ids[2]}`).check();
    await f.page.locator('button[data-bulk="delete"]').click();
    expect(await f.page.locator('#confirm-text').innerText()).toBe('Delete 2 selected job(s)?');
    await f.page.locator('#confirm-cancel').click();
    expect(await states(ids)).toEqual(['scheduled', 'scheduled', 'scheduled']);
    await f.page.locator('button[data-bulk="delete"]').click();
    await f.page.locator('#confirm-ok').click();
    await f.page.getByText('delete: 2 deleted, 0 cancelled job(s)').waitFor();
    expect(await states(ids)).toEqual(['scheduled']);
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 1, 10_000, 'one job left');
  });

  it('pauses a queue from the overview: its workers stop claiming, and run its jobs once resumed', async () => {
    await f.page.goto(f.dash.url);
    const emails = f.page.locator('tr[data-queue="emails"]');
    await emails.getByRole('button', { name: 'Pause' }).click();
    await emails.getByText('paused', { exact: true }).waitFor();
    const held = await f.producer.enqueue('email.send', { to: 'held@example.com' });
    // The workers still run other queues: a report runs while the email waits.
    const report = await f.producer.enqueue('report.flaky', { reportId: 'while-paused' });
    await waitFor(
      async () => ['completed', 'failed'].includes((await state(report.id)) ?? ''),
      15_000,
      'a report to run',
    );
    expect(await state(held.id)).toBe('available');
    await emails.getByRole('button', { name: 'Resume' }).click();
    await emails.getByText('active', { exact: true }).waitFor();
    await waitFor(async () => (await state(held.id)) === 'completed', 15_000, 'the held email to be sent');
  });
});
