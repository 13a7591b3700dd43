import { runChaos } from '../chaos/run-chaos.js';

/**
 * The chaos suite (test/chaos/run-chaos.ts), small: 300 jobs over two queues while worker processes
 * are SIGKILLed every few seconds, PostgreSQL restarts once, and one worker's connections freeze (no
 * data, no FIN) past heartbeatStaleAfter, then thaw. `npm run chaos` runs the full size.
 */
describe('chaos: SIGKILLed workers, a PostgreSQL restart and a frozen worker connection', () => {
  it('loses no job, completes none twice, and lands no completion from a stale lease', async () => {
    const report = await runChaos({ jobs: 300, rate: 30, killEveryMs: [2_000, 3_000] });
    if (!report.ok) console.log(report.summary);
    expect(report.violations).toEqual([]);
    expect(report.checked.length).toBeGreaterThanOrEqual(10);
    // The faults really happened.
    expect(report.kills).toBeGreaterThan(0);
    expect(report.restart).not.toBeNull();
    expect(report.freeze).not.toBeNull();
    expect((report.states.completed ?? 0) + (report.states.failed ?? 0)).toBe(300);
  }, 300_000);
});
