import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';
import { handlerControl } from './dashboard-app.js';

/** The README's screenshots are rewritten with AWA_DASHBOARD_SCREENSHOTS=1; other runs leave docs/ alone. */
const SHOTS = process.env.AWA_DASHBOARD_SCREENSHOTS === '1' ? 'docs' : join(tmpdir(), 'awa-dashboard-shots');

describeInBrowser('dashboard in headless Chromium', () => {
  const f = useDashboardInBrowser();
  const { sql, state } = f;

  beforeAll(async () => {
    // An hour of history for the chart, then live jobs: sent emails and a report that fails.
    await sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, finalized_at, args)
               SELECT 'email.send', 'emails', CASE WHEN i % 9 = 0 THEN 'failed' ELSE 'completed' END, 1,
                      now() - (i % 60) * interval '1 minute', jsonb_build_object('to', 'user' || i || '@example.com')
                 FROM generate_series(1, 400) i`);
    for (const to of ['ada@example.com', 'grace@example.com', 'linus@example.com'])
      await f.producer.enqueue('email.send', { to, userId: to.length });
  });

  const rowOf = (selector: string) => f.page.locator(`tr[${selector}]`);

  it('overview: every queue with its counts, status and the last hour as a chart', async () => {
    await waitFor(async () => handlerControl.completed.length >= 3, 15_000, 'the emails to be sent');
    const failed = (await f.producer.enqueue('report.flaky', { reportId: 'Q3' })).id;
    await waitFor(async () => (await state(failed)) === 'failed', 15_000, 'the report to fail');
    await f.page.goto(f.dash.url);
    const emails = rowOf('data-queue="emails"');
    await emails.waitFor();
    await waitFor(
      async () => (await rowOf('data-queue="reports"').innerText()).includes('\t1\t'),
      15_000,
      'a failed report',
    );
    expect(await f.page.locator('.chart svg rect.completed').count()).toBeGreaterThan(30);
    expect(await f.page.locator('.chart svg rect.failed').count()).toBeGreaterThan(3);
    expect(await emails.locator('td').nth(1).innerText()).toBe('active');
    expect(await f.page.locator('h1').innerText()).toBe('Overview');
    mkdirSync(SHOTS, { recursive: true });
    await f.page.screenshot({ path: join(SHOTS, 'dashboard-overview.png'), fullPage: true });
  });

  it('jobs: filters by state with the form, searches args by JSON containment and by text', async () => {
    await f.page.goto(`${f.dash.url}/jobs`);
    await f.page.locator('tr[data-job-id]').first().waitFor();
    await f.page.locator('input[name="state"][value="failed"]').check();
    await f.page.locator('input[name="queue"]').fill('reports');
    await f.page.getByRole('button', { name: 'Filter' }).click();
    await f.page.waitForURL(/state=failed/);
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 1, 10_000, 'one failed report');
    expect(await f.page.locator('tr[data-job-id] .state').innerText()).toBe('failed');

    await f.page.goto(`${f.dash.url}/jobs`);
    await f.page.locator('input[name="args"]').fill('{"to": "grace@example.com"}');
    await f.page.getByRole('button', { name: 'Filter' }).click();
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 1, 10_000, 'one job for grace');
    expect(await f.page.locator('tr[data-job-id] td.args').innerText()).toContain('grace@example.com');

    await f.page.goto(`${f.dash.url}/jobs?search=LINUS`);
    await waitFor(async () => (await f.page.locator('tr[data-job-id]').count()) === 1, 10_000, 'one job for linus');
    expect(await f.page.locator('tr[data-job-id] td.args').innerText()).toContain('linus@example.com');
  });

  it('jobs: pages through the list, older and newer', async () => {
    await f.page.goto(`${f.dash.url}/jobs?queue=emails&state=completed`);
    const first = await f.page.locator('tr[data-job-id]').first().getAttribute('data-job-id');
    await f.page.getByRole('button', { name: 'Older →' }).click();
    await f.page.getByText('page 2').waitFor();
    const second = await f.page.locator('tr[data-job-id]').first().getAttribute('data-job-id');
    expect(Number(second)).toBeLessThan(Number(first));
    await f.page.getByRole('button', { name: '← Newer' }).click();
    await f.page.getByText('page 1').waitFor();
    expect(await f.page.locator('tr[data-job-id]').first().getAttribute('data-job-id')).toBe(first);
  });

  it('jobs: a live poll answered after "Older →" does not paint page 1 over page 2', async () => {
    await f.page.goto(`${f.dash.url}/jobs?queue=emails&state=completed`);
    const first = await f.page.locator('tr[data-job-id]').first().getAttribute('data-job-id');
    // Hold the next poll of page 1 until page 2 is shown, then let it answer.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let pollSent!: () => void;
    const pollOnItsWay = new Promise<void>((resolve) => (pollSent = resolve));
    const pageOne = (url: string) => url.includes('/api/jobs?') && !new URL(url).searchParams.has('after');
    await f.page.route(/\/api\/jobs\?/, async (route) => {
      if (!pageOne(route.request().url())) return route.continue();
      pollSent();
      await held;
      await route.continue();
    });
    await pollOnItsWay;
    // Run in the page (a string: this project's types have no DOM): flags page 1's rows under "page 2".
    await f.page.evaluate(`(() => {
      window.stalePage = false;
      new MutationObserver(() => {
        const label = document.querySelector('.toolbar .muted:not(#selection)')?.textContent;
        if (label === 'page 2' && document.querySelector('tr[data-job-id="${first}"]')) window.stalePage = true;
      }).observe(document.body, { childList: true, subtree: true });
    })()`);
    await f.page.getByRole('button', { name: 'Older →' }).click();
    await f.page.getByText('page 2').waitFor();
    const answered = f.page.waitForResponse((r) => pageOne(r.url()));
    release();
    await answered;
    // Polls are chained: the next one is sent only once the held one has been handled.
    await f.page.waitForRequest((r) => r.url().includes('/api/jobs?'));
    await f.page.unroute(/\/api\/jobs\?/);
    expect(await f.page.evaluate('window.stalePage')).toBe(false);
    const shown = await f.page.locator('tr[data-job-id]').first().getAttribute('data-job-id');
    expect(Number(shown)).toBeLessThan(Number(first));
  });

  it('jobs: a forced render overtaken by a live poll of the same data still happens', async () => {
    // The page's timers only run when told: the live poll fires exactly where this test says.
    await f.page.clock.install();
    await f.page.goto(`${f.dash.url}/jobs?queue=emails&state=completed`);
    await f.page.locator('tr[data-job-id]').first().waitFor();
    expect(await f.page.locator('button[data-bulk="cancel"]').isDisabled()).toBe(true);
    // Checking "all matching" re-renders (forced) with the bulk buttons enabled; hold that load.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = true;
    await f.page.route(/\/api\/jobs\?/, async (route) => {
      if (!holding) return route.continue();
      holding = false;
      await held;
      await route.continue();
    });
    await f.page.locator('#all-matching').check();
    // The live poll overtakes it with the same data; then the held load answers, too late to render.
    const polled = f.page.waitForResponse((r) => r.url().includes('/api/jobs?'));
    await f.page.clock.runFor(1_000);
    await polled;
    const answered = f.page.waitForResponse((r) => r.url().includes('/api/jobs?'));
    release();
    await answered;
    await f.page.unroute(/\/api\/jobs\?/);
    await f.page.locator('button[data-bulk="cancel"]:not([disabled])').waitFor({ timeout: 5_000 });
    expect(await f.page.locator('#selection').innerText()).toBe('all matching');
  });

  it('job detail: args as collapsible JSON, the attempts with their errors, no lease once finished', async () => {
    const [report] = await sql(`SELECT id::text FROM awa.all_jobs WHERE kind = 'report.flaky' ORDER BY id LIMIT 1`);
    await f.page.goto(`${f.dash.url}/jobs?kind=report.flaky`);
    await f.page.getByRole('link', { name: `#${report.id}` }).click();
    await f.page.waitForURL(new RegExp(`/jobs/${report.id}$`));
    await f.page.locator('#attempts li').first().waitFor();
    expect(await f.page.locator('#attempts').innerText()).toContain('printer on fire');
    expect(await f.page.locator('#args').innerText()).toContain('"Q3"');
    await f.page.locator('#args summary').first().click();
    expect(await f.page.locator('#args details').first().getAttribute('open')).toBeNull();
    await f.page.locator('#args summary').first().click();
    expect(await f.page.locator('#lease').innerText()).toContain('not running');
  });

  it('job detail of a running job: its lease, progress, tags and earlier errors', async () => {
    const args = { invoiceId: 'INV-2026-0042', customer: { id: 42, plan: 'pro' } };
    const { id } = await f.producer.enqueue('invoice.render', args, { maxAttempts: 5 });
    await waitFor(async () => (await state(id)) === 'running', 15_000, 'the invoice to run');
    await sql(
      `UPDATE awa.jobs SET attempt = 3, tags = '{billing,eu}', progress = '{"pages": 12, "of": 40}',
              errors = jsonb_build_array(
                jsonb_build_object('at', now() - interval '3 minutes', 'attempt', 1, 'error', 'Error: ECONNRESET'),
                jsonb_build_object('at', now() - interval '1 minute', 'attempt', 2, 'error', 'Error: upstream 503'))
        WHERE id = $1`,
      [id],
    );
    const [{ instance_id: instance }] = await sql('SELECT instance_id FROM awa.active_leases WHERE job_id = $1', [id]);
    const job = { id };
    await f.page.goto(`${f.dash.url}/jobs/${job.id}`);
    await f.page.locator('#lease dl').waitFor();
    expect(await f.page.locator('#lease').innerText()).toContain(instance);
    expect(await f.page.locator('#progress').innerText()).toContain('pages');
    expect(await f.page.locator('#attempts li').count()).toBe(3);
    await f.page.screenshot({ path: join(SHOTS, 'dashboard-job.png'), fullPage: true });
    handlerControl.invoices.resolve();
    await waitFor(async () => (await state(id)) === 'completed', 15_000, 'the invoice to complete');
  });

  it('instances: the live instance, as the leader, with its last heartbeat', async () => {
    await f.page.goto(`${f.dash.url}/instances`);
    const row = f.page.locator('tr[data-instance]');
    await waitFor(
      async () => (await row.count()) === 1 && (await row.innerText()).includes('leader'),
      15_000,
      'leader',
    );
    expect(await row.innerText()).toMatch(/ago/);
  });

  it('live refresh shows new jobs by itself, and its button pauses and resumes it', async () => {
    await f.page.goto(`${f.dash.url}/jobs?kind=late.kind`);
    await f.page.getByText('No job matches.').waitFor();
    const toggle = f.page.locator('#live-toggle');
    await toggle.click();
    expect([await toggle.innerText(), await f.page.locator('#live-status').innerText()]).toEqual([
      'Resume refresh',
      'paused',
    ]);
    await sql(`INSERT INTO awa.jobs (kind, queue) VALUES ('late.kind', 'elsewhere')`);
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await f.page.locator('tr[data-job-id]').waitFor();
    // The row's cells: the kind is there (a selection column comes first when actions are on).
    expect(await f.page.locator('tr[data-job-id] td').allInnerTexts()).toContain('late.kind');
  });
});
