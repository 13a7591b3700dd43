import type { TestingModule } from '@nestjs/testing';
import { MaintenanceService } from 'nestjs-awa';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { MAINTENANCE_LEADER, type MaintenanceLeader } from '../../lib/maintenance/maintenance-leader.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { QUIET_OPTIONS } from './quiet-app.js';

/**
 * Behind a transaction pooler the leader's writes are fenced by a transaction that holds the
 * leader row FOR SHARE. A leader that stalls inside that transaction (a frozen process, a blocked
 * event loop, a lost connection) must not keep the row locked, and so every takeover waiting,
 * for ever: PostgreSQL ends the stalled fence, and another instance takes over.
 */
describe('a leader stalled inside its fence (connectionMode transaction-pooler)', () => {
  let db: TestDatabase;
  const apps: TestingModule[] = [];
  let resume: () => void = () => undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    resume();
    for (const app of apps.reverse()) await app.close();
    await db?.drop();
  });

  it('does not keep another instance from taking the lease once it expired', async () => {
    // A lease of 3 × 500 ms; maintenance itself is stopped, the test holds the fence.
    const stalled = await startTestApp({
      url: db.url,
      awa: { ...QUIET_OPTIONS, orphanSweepInterval: 500, connectionMode: 'transaction-pooler' },
    });
    apps.push(stalled);
    await stalled.get(MaintenanceService).stop();
    const leader = stalled.get<MaintenanceLeader>(MAINTENANCE_LEADER, { strict: false });
    expect(await leader.ensureLeader()).toBe(true);
    let inside = false;
    const fence = leader
      .fenced(async () => {
        inside = true;
        await new Promise<void>((resolve) => (resume = resolve)); // stalled, holding the fence
      })
      .catch((error: unknown) => error);
    await waitFor(() => inside, 10_000, 'the fence');

    const successor = await startTestApp({
      url: db.url,
      awa: { ...FAST_OPTIONS, connectionMode: 'transaction-pooler' },
    });
    apps.push(successor);
    const successorId = successor.get(InstanceSession, { strict: false }).id;
    await waitFor(() => successor.get(MaintenanceService).isLeader, 30_000, 'the takeover');
    expect(await queryOnce(db.url, 'SELECT holder FROM awa.leader')).toEqual([{ holder: successorId }]);

    // The stalled leader's fence was ended under it: its work cannot commit.
    resume();
    expect(await fence).toBeInstanceOf(Error);
  });
});
