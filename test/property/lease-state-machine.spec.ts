import fc from 'fast-check';
import { LeaseMachine, newStats } from './lease-machine.js';
import { scenarioArb } from './lease-commands.js';
import { createPropertyDb, type PropertyDb } from './property-db.js';

/**
 * Random sequences of claim / heartbeat / complete / fail / rescue (stale heartbeat, deadline,
 * orphan) / crash / shutdown / a completion racing a rescue, against the real statements of
 * lib/sql on a real database, checked after every step (see LeaseMachine): a running job has
 * exactly one lease, a job that is not running has none, run_lease only grows, at most one
 * completion per job, and a stale holder's complete or fail changes nothing.
 */
describe('lease state machine (property-based, real SQL)', () => {
  let db: PropertyDb;

  beforeAll(async () => {
    db = await createPropertyDb();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('keeps the lease invariants after every step of random command sequences', async () => {
    const stats = newStats();
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ jobs, steps }) => {
        const machine = new LeaseMachine(db, stats);
        await machine.start(jobs);
        for (const command of steps) await machine.apply(command);
      }),
      { numRuns: 50 },
    );
    // The runs reached the paths that matter (each is near-certain over 50 runs).
    expect(stats.claimed).toBeGreaterThan(0);
    expect(stats.completed).toBeGreaterThan(0);
    expect(stats.staleFinishes).toBeGreaterThan(0);
    expect(stats.rescued).toBeGreaterThan(0);
    expect(stats.liveRaces).toBeGreaterThan(0);
  }, 120_000);
});
