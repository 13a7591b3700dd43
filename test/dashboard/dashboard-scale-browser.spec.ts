import { FINISHED_EXACT_CAP } from '../../lib/admin/queue-counts.js';
import { SCAN_WINDOW } from '../../lib/dashboard/dashboard.service.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';

/**
 * On a table with more finished jobs than the dashboard counts exactly or searches per page, the
 * pages say so: estimated counts carry ≈, and a search that stopped at its window says where.
 */
describeInBrowser('dashboard over many finished jobs in headless Chromium', () => {
  const f = useDashboardInBrowser();
  const FINISHED = SCAN_WINDOW + 20_000;

  beforeAll(async () => {
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, finalized_at, args)
                 SELECT 'email.send', 'emails', 'completed', 1, now() - interval '2 hours', jsonb_build_object('n', i)
                   FROM generate_series(1, ${FINISHED}) i`);
    await f.sql('ANALYZE awa.jobs');
  });

  it('shows the completed count of a queue as an estimate (≈), the unfinished ones exactly', async () => {
    expect(FINISHED).toBeGreaterThan(FINISHED_EXACT_CAP);
    await f.sql(
      `INSERT INTO awa.jobs (kind, queue, state, run_at) VALUES ('email.send', 'emails', 'scheduled', now() + interval '1 hour')`,
    );
    await f.page.goto(f.dash.url);
    const cells = f.page.locator('tr[data-queue="emails"] td.num');
    await cells.first().waitFor();
    const texts = await cells.allInnerTexts();
    // scheduled, available, running, retryable, completed, failed, cancelled
    expect(texts.slice(0, 4)).toEqual(['1', '0', '0', '0']);
    expect(texts[4]).toMatch(/^≈ \d+$/);
    const estimate = Number(texts[4]!.replace('≈ ', ''));
    expect(estimate).toBeGreaterThan(FINISHED * 0.8);
    expect(estimate).toBeLessThan(FINISHED * 1.2);
  });

  it('says that a search stopped at its window, and searches the older jobs on "Older"', async () => {
    await f.page.goto(`${f.dash.url}/jobs?search=no-such-text`);
    const bound = f.page.locator('#scan-bound');
    await bound.waitFor();
    expect(await bound.innerText()).toContain(`Searched the ${SCAN_WINDOW} jobs down to #`);
    await f.page.getByRole('button', { name: 'Older →' }).click();
    await f.page.getByText('page 2').waitFor();
    await f.page.getByText('No job matches.').waitFor();
    // The second window reached the first job: nothing older to search, no notice.
    await bound.waitFor({ state: 'detached' });
    expect(await f.page.getByRole('button', { name: 'Older →' }).isDisabled()).toBe(true);
  });
});
