import { KEY_CHECK_NAME, rateCheckName, STALL_NAME, STRANDED_NAME } from '../chaos/chaos-flow-checks.js';
import { EVENT_CHECKS } from '../chaos/chaos-invariants.js';
import { DEAD_ROWS_CHECK } from '../chaos/chaos-dead-rows.js';
import { runChaos } from '../chaos/run-chaos.js';

const RATE_LIMIT = { limit: 5, period: 1_000 };

/**
 * The chaos suite (test/chaos/run-chaos.ts), small: 300 jobs over four queues (two plain, a keyed one
 * that one worker serves for one of its two kinds only, a rate-limited one that one worker prefetches
 * from) while worker processes are SIGKILLed every few seconds, PostgreSQL restarts once, and one
 * worker's connections freeze (no data, no FIN) past heartbeatStaleAfter, then thaw, a session
 * holds one snapshot open for 8 s (claims then read on from their cursors), and every worker's
 * connections are delayed 30 ms each way for 6 s (the rated claims outlast their first entry wait), while
 * bursts of dead rows come to the lease table for the leaders to vacuum. `npm run chaos` runs the full size. The rate limit is low enough that the rated queue is kept saturated.
 */
describe('chaos: SIGKILLed workers, a PostgreSQL restart and a frozen worker connection', () => {
  it('loses no job, completes none twice, lands no completion from a stale lease, keeps handler starts within the rate limit and leases within keyConcurrency, and strands no job', async () => {
    const report = await runChaos({
      jobs: 300,
      rate: 30,
      killEveryMs: [2_000, 3_000],
      rateLimit: RATE_LIMIT,
    });
    if (!report.ok) console.log(report.summary);
    expect(report.violations).toEqual([]);
    expect(report.checked).toEqual(
      expect.arrayContaining([rateCheckName(RATE_LIMIT), KEY_CHECK_NAME, STRANDED_NAME, STALL_NAME]),
    );
    expect(report.checked.length).toBeGreaterThanOrEqual(14);
    // The faults really happened.
    expect(report.kills).toBeGreaterThan(0);
    expect(report.restart).not.toBeNull();
    expect(report.freeze).not.toBeNull();
    expect(report.stop).not.toBeNull();
    expect(report.snapshot).not.toBeNull();
    expect(report.slow).not.toBeNull();
    // Bursts of dead rows came to the lease table throughout, and the leaders vacuumed it.
    expect(report.checked).toEqual(expect.arrayContaining([DEAD_ROWS_CHECK]));
    expect(report.deadRows!.bursts).toBeGreaterThan(0);
    expect(report.deadRows!.vacuums).toBeGreaterThan(0);
    // The flow queues really ran: rated handlers started, and some key held more than one lease at once.
    expect(report.flow.ratedStarts).toBeGreaterThan(0);
    expect(report.flow.mostKeyLeases).toBeGreaterThan(1);
    // Every plain job finished; the workflow load ran beside it (4 steps per graph, each ended).
    const steps = report.workflows.states;
    expect(
      (report.states.completed ?? 0) + (report.states.failed ?? 0) - (steps.completed ?? 0) - (steps.failed ?? 0),
    ).toBe(300);
    expect(report.workflows.graphs).toBeGreaterThan(0);
    expect(report.workflows.steps).toBe(4 * report.workflows.graphs);
    // The durable-event group really ran: an event per finished job at least, each handled.
    expect(report.checked).toEqual(expect.arrayContaining(EVENT_CHECKS.map((c) => c.name)));
    expect(report.events.stored).toBeGreaterThanOrEqual(300);
    expect(report.events.delivered).toBeGreaterThanOrEqual(report.events.stored);
  }, 300_000);
});
