import { cronTimeOf, latestFire, nextFireAfter } from '../../lib/cron/cron.js';
import { MAX_MISSED_FIRES, MISSED_GRACE_MS, planFires } from '../../lib/schedules/fire-times.js';

const at = (iso: string) => new Date(iso);
const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('fire times (cron 4.4 CronTime)', () => {
  const everySecond = cronTimeOf('* * * * * *', null);
  const everyTwoSeconds = cronTimeOf('*/2 * * * * *', null);
  const hourly = cronTimeOf('0 * * * *', null);

  it('reads 6-field expressions to the second, and time zones', () => {
    expect(new Date(nextFireAfter(everyTwoSeconds, Date.parse('2026-01-01T00:00:00.500Z'))!).toISOString()).toBe(
      '2026-01-01T00:00:02.000Z',
    );
    const berlin = cronTimeOf('0 3 * * *', 'Europe/Berlin');
    expect(new Date(nextFireAfter(berlin, Date.parse('2026-07-01T00:00:00Z'))!).toISOString()).toBe(
      '2026-07-01T01:00:00.000Z',
    );
  });

  it('finds the latest fire in a range by bisection', () => {
    expect(latestFire(hourly, Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-03-05T17:59:59Z'))).toBe(
      Date.parse('2026-03-05T17:00:00Z'),
    );
    expect(latestFire(everySecond, Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-01-01T00:00:00.900Z'))).toBe(
      undefined,
    );
  });

  it('enqueues every fire within the grace period, whatever the policy (a late tick or a failover)', () => {
    for (const missed of ['skip', 'once', 'all'] as const) {
      const plan = planFires(everySecond, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:03.500Z'), missed);
      expect(iso(plan.fires)).toEqual([
        '2026-01-01T00:00:00.000Z',
        '2026-01-01T00:00:01.000Z',
        '2026-01-01T00:00:02.000Z',
        '2026-01-01T00:00:03.000Z',
      ]);
      expect(plan.next).toEqual(at('2026-01-01T00:00:04Z'));
      expect(plan.skipped).toBe(false);
    }
  });

  it('fires nothing before the next fire time, and keeps it', () => {
    const plan = planFires(hourly, at('2026-01-01T01:00:00Z'), at('2026-01-01T00:59:59Z'), 'once');
    expect(plan).toEqual({ fires: [], next: at('2026-01-01T01:00:00Z'), skipped: false });
  });

  describe('missed fires (older than the grace period, the app was down)', () => {
    const downSince = at('2026-01-01T00:00:00Z');
    const now = at('2026-01-03T00:30:00Z'); // two days of hourly fires missed

    it("'skip' enqueues none of them", () => {
      const plan = planFires(hourly, downSince, now, 'skip');
      expect(plan.fires).toEqual([]);
      expect(plan.skipped).toBe(true);
      expect(plan.next).toEqual(at('2026-01-03T01:00:00Z'));
    });

    it("'once' enqueues the latest of them only", () => {
      const plan = planFires(hourly, downSince, now, 'once');
      expect(iso(plan.fires)).toEqual(['2026-01-03T00:00:00.000Z']);
      expect(plan.next).toEqual(at('2026-01-03T01:00:00Z'));
    });

    it("'all' enqueues each of them, oldest first", () => {
      const plan = planFires(hourly, downSince, now, 'all');
      expect(plan.fires).toHaveLength(49);
      expect(plan.fires[0]).toEqual(downSince);
      expect(plan.fires.at(-1)).toEqual(at('2026-01-03T00:00:00Z'));
      expect(plan.skipped).toBe(false);
    });

    it(`'all' is capped at the latest ${MAX_MISSED_FIRES}`, () => {
      const plan = planFires(hourly, downSince, at('2026-01-10T00:30:00Z'), 'all');
      expect(plan.fires).toHaveLength(MAX_MISSED_FIRES);
      expect(plan.fires.at(-1)).toEqual(at('2026-01-10T00:00:00Z'));
      expect(plan.fires[0]).toEqual(new Date(Date.parse('2026-01-10T00:00:00Z') - (MAX_MISSED_FIRES - 1) * 3_600_000));
      expect(plan.skipped).toBe(true);
    });

    it('missed and late fires of a seconds cron: the policy applies only beyond the grace period', () => {
      const now2 = new Date(downSince.getTime() + MISSED_GRACE_MS + 10_000);
      const once = planFires(everySecond, downSince, now2, 'once');
      // The latest missed fire, then each second of the grace period.
      expect(once.fires[0]).toEqual(new Date(now2.getTime() - MISSED_GRACE_MS));
      expect(once.fires).toHaveLength(1 + MISSED_GRACE_MS / 1000);
      expect(planFires(everySecond, downSince, now2, 'skip').fires).toHaveLength(MISSED_GRACE_MS / 1000);
      // Eleven missed fires (second 0 to 10, all under the cap) and the grace period's.
      expect(planFires(everySecond, downSince, now2, 'all').fires).toHaveLength(11 + MISSED_GRACE_MS / 1000);
    });
  });
});
