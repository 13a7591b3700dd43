import { MaintenanceService, RescueErrors } from 'nestjs-awa';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { MAINTENANCE_LEADER, type MaintenanceLeader } from '../../lib/maintenance/maintenance-leader.js';
import { HEARTBEAT_RESCUE, type RescueTask } from '../../lib/maintenance/tasks/rescue.task.js';
import { leasesOf, readJob } from '../sql/sql-fixture.js';
import { seedRunning } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

/**
 * connectionMode 'transaction-pooler' leads maintenance by a row lease whose term fences every
 * task's writes (here on a direct connection: the pooler itself is test/pgbouncer's business).
 */
describe('maintenance leadership behind a transaction pooler (row lease)', () => {
  const ctx = useQuietApp(
    {
      connectionMode: 'transaction-pooler',
      // Long enough that a job rescued in a sweep is not also promoted by that sweep.
      queues: { default: { retryBaseDelay: 60_000, retryMaxDelay: 60_000 } },
    },
    { reset: (exec) => exec('TRUNCATE awa.leader') },
  );
  const { exec } = ctx;
  const leader = () => ctx.app.get<MaintenanceLeader>(MAINTENANCE_LEADER, { strict: false });
  const instanceId = () => ctx.app.get(InstanceSession, { strict: false }).id;

  it('takes the lease in awa.leader, and its sweep rescues inside the fence', async () => {
    const stale = await seedRunning(exec, { heartbeatAgeMs: HOUR });
    expect(await leader().ensureLeader()).toBe(true);
    expect(await exec('SELECT holder, term::int FROM awa.leader')).toEqual([{ holder: instanceId(), term: 1 }]);
    expect(await ctx.app.get(MaintenanceService).sweep()).toMatchObject({ 'heartbeat rescue': 1 });
    expect(await readJob(exec, stale.id)).toMatchObject({
      state: 'retryable',
      errors: [{ error: RescueErrors.heartbeatStale }],
    });
    await leader().resign();
  });

  it("a deposed leader's sweep changes nothing, though it still believed it led", async () => {
    const stale = await seedRunning(exec, { heartbeatAgeMs: HOUR });
    expect(await leader().ensureLeader()).toBe(true);
    // Another instance took the lease (say ours expired while this process was stalled).
    await exec(`UPDATE awa.leader SET holder = 'usurper', term = term + 1, expires_at = now() + interval '1 hour'`);
    expect(leader().isLeader).toBe(true); // it has not noticed yet

    expect(await leader().fenced(() => ctx.app.get<RescueTask>(HEARTBEAT_RESCUE.token).run())).toBeUndefined();
    expect(await readJob(exec, stale.id)).toMatchObject({ state: 'running', errors: [] });
    expect(await leasesOf(exec, stale.id)).toEqual([`${stale.runLease}@instance-a`]);
    expect(leader().isLeader).toBe(false);
    expect(await ctx.app.get(MaintenanceService).sweep()).toBeUndefined();
    expect(await exec('SELECT holder FROM awa.leader')).toEqual([{ holder: 'usurper' }]);
  });

  it('two ticks asking at once share one claim, so the instance does not outbid itself', async () => {
    expect(await Promise.all([leader().ensureLeader(), leader().ensureLeader()])).toEqual([true, true]);
    expect(await exec('SELECT term::int FROM awa.leader')).toEqual([{ term: 1 }]);
    expect(await leader().fenced(async () => 'ran')).toBe('ran');
    await leader().resign();
  });

  it('a task that fails inside the fence rolls back its writes, and the lease stays', async () => {
    const stale = await seedRunning(exec, { heartbeatAgeMs: HOUR });
    expect(await leader().ensureLeader()).toBe(true);
    await expect(
      leader().fenced(async () => {
        await ctx.app.get<RescueTask>(HEARTBEAT_RESCUE.token).run();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await readJob(exec, stale.id)).toMatchObject({ state: 'running' });
    expect(leader().isLeader).toBe(true);
    await leader().resign();
    expect(await exec('SELECT expires_at <= now() AS free FROM awa.leader')).toEqual([{ free: true }]);
  });
});
