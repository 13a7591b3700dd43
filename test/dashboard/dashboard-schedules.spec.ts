import { JobSchedules } from 'nestjs-awa';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';
import { handlerControl, startDashboardApp } from './dashboard-app.js';

/** A schedule that never fires during the test (3 a.m. in Berlin), and one that fires every second. */
// Fires only at 03:00 on 29 February: never while the tests run (unless on that night of a leap year).
const NIGHTLY = 'digest.nightly';
const PULSE = 'pulse.second';

/** The schedules page in headless Chromium: the list, pause, resume and run now, against the real JobSchedules. */
describeInBrowser('dashboard schedules page in headless Chromium', () => {
  const f = useDashboardInBrowser();
  const { sql, state } = f;
  const row = (name: string) => f.page.locator(`tr[data-schedule="${name}"]`);
  const cells = (name: string) => row(name).locator('td').allInnerTexts();
  const stored = async (name: string) =>
    (
      await sql('SELECT paused, next_fire_at, last_fire_at, now() AS db_now FROM awa.schedules WHERE name = $1', [name])
    )[0] as { paused: boolean; next_fire_at: Date | null; last_fire_at: Date | null; db_now: Date };
  /** A time as the page shows it: in the browser's own locale and zone. */
  const shown = (at: Date | null) =>
    at ? f.page.evaluate((iso) => new Date(iso).toLocaleString(), at.toISOString()) : Promise.resolve('–');
  const fires = async (name: string) =>
    (
      await sql(`SELECT run_at FROM awa.all_jobs WHERE $1 = ANY (tags) AND unique_key IS NOT NULL ORDER BY run_at`, [
        `awa:schedule:${name}`,
      ])
    ).map((r) => r.run_at as Date);

  beforeAll(async () => {
    const schedules = f.dash.app.get(JobSchedules);
    await schedules.upsertSchedule({
      name: NIGHTLY,
      cron: '0 3 29 2 *',
      timeZone: 'Europe/Berlin',
      kind: 'email.send',
      args: { digest: 'nightly' },
    });
    await schedules.upsertSchedule({ name: PULSE, cron: '* * * * * *', kind: 'email.send', args: { pulse: true } });
  });

  it('lists each schedule with its kind, queue, cron, status, next fire and last fire', async () => {
    await waitFor(async () => (await stored(PULSE)).last_fire_at, 15_000, 'the pulse to fire');
    await f.page.goto(`${f.dash.url}/schedules`);
    await row(NIGHTLY).waitFor();
    expect(await f.page.locator('h1').innerText()).toBe('Schedules');
    expect(
      await f.page.locator('tr[data-schedule]').evaluateAll((rows) => rows.map((r) => r.dataset.schedule)),
    ).toEqual([NIGHTLY, PULSE]);
    const nightly = await stored(NIGHTLY);
    expect(nightly.next_fire_at).not.toBeNull();
    expect((await cells(NIGHTLY)).slice(0, 7)).toEqual([
      NIGHTLY,
      'email.send',
      'emails',
      '0 3 29 2 * Europe/Berlin',
      'active',
      await shown(nightly.next_fire_at),
      '–',
    ]);
    expect(await row(NIGHTLY).getByRole('button').allInnerTexts()).toEqual(['Pause', 'Run now']);
    // The pulse has fired: its last fire is on the page (the live refresh keeps it current).
    await waitFor(async () => (await cells(PULSE))[6] !== '–', 10_000, 'the last fire on the page');
    expect((await cells(PULSE)).slice(0, 5)).toEqual([PULSE, 'email.send', 'emails', '* * * * * * UTC', 'active']);
  });

  it('pause: the schedule is paused in awa.schedules and on the page, and fires no more', async () => {
    await f.page.goto(`${f.dash.url}/schedules`);
    await row(PULSE).getByRole('button', { name: 'Pause' }).click();
    await f.page.getByText(`${PULSE} paused`).waitFor();
    const paused = await stored(PULSE);
    expect(paused.paused).toBe(true);
    await row(PULSE).getByRole('button', { name: 'Resume' }).waitFor();
    const expected = [await shown(paused.next_fire_at), await shown(paused.last_fire_at)];
    await waitFor(
      async () => {
        const texts = await cells(PULSE);
        return texts[4] === 'paused' && texts[5] === expected[0] && texts[6] === expected[1];
      },
      10_000,
      'the paused schedule on the page',
    );
    // Two of its fire times pass while the leader keeps ticking: neither is enqueued.
    const last = paused.last_fire_at!;
    await waitFor(
      async () => (await stored(PULSE)).db_now.getTime() > last.getTime() + 2_500,
      10_000,
      'two fire times to pass',
    );
    expect((await stored(PULSE)).last_fire_at).toEqual(last);
    expect((await fires(PULSE)).filter((at) => at > last)).toEqual([]);
  });

  it('resume: the schedule is active again and fires from now on, without making up the paused ones', async () => {
    const before = await stored(PULSE);
    expect(before.paused).toBe(true);
    // At least two fire times passed in the pause (the test before waited for them): none may be made up.
    expect(before.db_now.getTime()).toBeGreaterThan(before.last_fire_at!.getTime() + 2_000);
    await f.page.goto(`${f.dash.url}/schedules`);
    await row(PULSE).getByRole('button', { name: 'Resume' }).click();
    await f.page.getByText(`${PULSE} resumed`).waitFor();
    await row(PULSE).getByRole('button', { name: 'Pause' }).waitFor();
    const resumed = await stored(PULSE);
    expect(resumed.paused).toBe(false);
    // The next fire is after the resume (the second it was asked in or later), not a missed one.
    expect(resumed.next_fire_at!.getTime()).toBeGreaterThan(before.db_now.getTime());
    const fired = await waitFor(
      async () => {
        const now = await stored(PULSE);
        return now.last_fire_at! > before.last_fire_at! ? now.last_fire_at : null;
      },
      15_000,
      'the pulse to fire again',
    );
    expect((await cells(PULSE))[4]).toBe('active');
    // No fire in the pause: the first fire after it is for a time after the resume was asked for.
    // (Not compared with `resumed.next_fire_at`: the pulse may fire between the click and that read.)
    const afterPause = (await fires(PULSE)).filter((at) => at > before.last_fire_at!);
    expect(afterPause.length).toBeGreaterThan(0);
    expect(afterPause[0]!.getTime()).toBeGreaterThan(before.db_now.getTime());
    expect(fired.getTime()).toBeGreaterThan(before.db_now.getTime());
    await f.dash.app.get(JobSchedules).pauseSchedule(PULSE); // quiet from here on
  });

  it("run now: enqueues one job of the schedule's kind, which completes; its next fire stays", async () => {
    const before = await stored(NIGHTLY);
    await f.page.goto(`${f.dash.url}/schedules`);
    await row(NIGHTLY).getByRole('button', { name: 'Run now' }).click();
    await f.page.getByText(`${NIGHTLY}: enqueued`).waitFor();
    const jobs = await sql(`SELECT id::text, kind, queue, args, unique_key FROM awa.all_jobs WHERE $1 = ANY (tags)`, [
      `awa:schedule:${NIGHTLY}`,
    ]);
    expect(jobs.map(({ id: _id, ...job }) => job)).toEqual([
      { kind: 'email.send', queue: 'emails', args: { digest: 'nightly' }, unique_key: null },
    ]);
    const id = jobs[0].id as string;
    await waitFor(async () => (await state(id)) === 'completed', 15_000, 'the digest to be sent');
    expect(handlerControl.completed).toContain(id);
    const after = await stored(NIGHTLY);
    expect([after.paused, after.next_fire_at, after.last_fire_at]).toEqual([false, before.next_fire_at, null]);
    // The job on the jobs page, by the schedule's tag.
    await f.page.goto(`${f.dash.url}/jobs?tag=${encodeURIComponent(`awa:schedule:${NIGHTLY}`)}`);
    await f.page.locator(`tr[data-job-id="${id}"] .state-completed`).waitFor();
  });

  it('read-only: the schedules are listed without pause, resume or run-now buttons', async () => {
    const readOnly = await startDashboardApp({
      dbUrl: f.db.url,
      dashboard: { path: '/ro', readOnly: true, refreshInterval: 300 },
      noWorkers: true,
    });
    try {
      await f.page.goto(`${readOnly.url}/schedules`);
      await row(NIGHTLY).waitFor();
      expect(await f.page.locator('tr[data-schedule]').count()).toBe(2);
      expect(await f.page.locator('.badge', { hasText: 'read-only' }).count()).toBe(1);
      expect(await f.page.locator('#content button').count()).toBe(0);
      expect((await cells(NIGHTLY)).slice(0, 4)).toEqual([NIGHTLY, 'email.send', 'emails', '0 3 29 2 * Europe/Berlin']);
    } finally {
      await readOnly.close();
    }
  });
});
