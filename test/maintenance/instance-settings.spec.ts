import { RescueErrors } from 'nestjs-awa';
import pg from 'pg';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { HEARTBEAT_RESCUE } from '../../lib/maintenance/tasks/rescue.task.js';
import { OrphanRescueTask } from '../../lib/maintenance/tasks/orphan-rescue.task.js';
import { instancesSql } from '../../lib/sql/index.js';
import { leasesOf, readJob } from '../sql/sql-fixture.js';
import { seedRunning } from '../support/job-factory.js';
import { useQuietApp, useTestDatabase } from './quiet-app.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/**
 * Two instances with different settings on one database: the leader (stale after 30 s, retries
 * after 5 s) rescues the leases of a patient worker (stale after 1 h, retries after 10 min). Each
 * lease is judged, and its job retried, by the settings of the instance that holds it.
 */
describe('rescues follow the settings of the instance owning the lease', () => {
  const db = useTestDatabase();
  const leader = useQuietApp(
    { queues: { default: { retryBaseDelay: 5_000, retryMaxDelay: 5_000 } } },
    {
      database: db,
      reset: (sql) => sql(`DELETE FROM awa.instances WHERE hostname = 'copied'`),
    },
  );
  const patient = useQuietApp(
    {
      heartbeatStaleAfter: HOUR,
      queues: {
        default: { retryBaseDelay: 10 * MINUTE, retryMaxDelay: 10 * MINUTE },
        reports: { retryBaseDelay: 20 * MINUTE, retryMaxDelay: 20 * MINUTE },
      },
    },
    { database: db },
  );
  const { exec } = leader;
  let patientId: string;
  const lockHolders: pg.Client[] = [];
  db.onClose(() => Promise.all(lockHolders.map((c) => c.end().catch(() => undefined))));
  beforeAll(() => {
    patientId = patient.app.get(InstanceSession, { strict: false }).id;
  });

  /** A copy of the patient's row under another id and lock key, `ageMs` old; `live` holds its lock. */
  async function copyOfPatient(id: string, { live, ageMs }: { live: boolean; ageMs: number }): Promise<void> {
    const key = 700_000 + lockHolders.length;
    await exec(
      `INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, heartbeat_at, settings)
                SELECT $1, 'copied', pid, queues, $2, now() - $3::float8 * interval '1 millisecond', settings
                  FROM awa.instances WHERE id = $4`,
      [id, key, ageMs, patientId],
    );
    if (!live) return;
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    lockHolders.push(client);
    expect((await client.query({ text: instancesSql.acquireLivenessLock.text, values: [key] })).rows).toEqual([
      { acquired: true },
    ]);
  }

  it('every instance writes its heartbeatStaleAfter and per-queue retry settings on its row', async () => {
    const [row] = await exec(`SELECT settings FROM awa.instances WHERE id = $1`, [patientId]);
    expect(row.settings).toEqual({
      heartbeatStaleAfter: HOUR,
      queues: {
        default: { retryBaseDelay: 10 * MINUTE, retryMaxDelay: 10 * MINUTE },
        reports: { retryBaseDelay: 20 * MINUTE, retryMaxDelay: 20 * MINUTE },
      },
    });
  });

  it(
    'a lease is stale only past the heartbeatStaleAfter of its own ' + "instance (the leader's when its row is gone)",
    async () => {
      const patients = await seedRunning(exec, { instanceId: patientId, heartbeatAgeMs: 10 * MINUTE });
      const orphans = await seedRunning(exec, { instanceId: 'no-such-instance', heartbeatAgeMs: 10 * MINUTE });
      expect(await leader.task(HEARTBEAT_RESCUE.token).run()).toBe(1);
      expect(await readJob(exec, patients.id)).toMatchObject({ state: 'running' });
      expect(await leasesOf(exec, patients.id)).toEqual([`1@${patientId}`]);
      const rescued = await readJob(exec, orphans.id);
      expect(rescued).toMatchObject({ state: 'retryable', errors: [{ error: RescueErrors.heartbeatStale }] });
      expect(rescued!.retry_delay_ms).toBeCloseTo(5_000, 3);
    },
  );

  it(
    "the patient instance's lease is rescued once its own " + 'heartbeatStaleAfter passed, with its own retry settings',
    async () => {
      const onDefault = await seedRunning(exec, { instanceId: patientId, heartbeatAgeMs: 2 * HOUR });
      const onReports = await seedRunning(exec, { instanceId: patientId, queue: 'reports', heartbeatAgeMs: 2 * HOUR });
      expect(await leader.task(HEARTBEAT_RESCUE.token).run()).toBe(2);
      expect((await readJob(exec, onDefault.id))!.retry_delay_ms).toBeCloseTo(10 * MINUTE, 3);
      // The leader does not know queue `reports`: without the owner's settings it would get 1 s.
      expect((await readJob(exec, onReports.id))!.retry_delay_ms).toBeCloseTo(20 * MINUTE, 3);
    },
  );

  it(
    "a live instance whose row is older than the leader's " + 'heartbeatStaleAfter, but not its own, is not dead',
    async () => {
      await copyOfPatient('slow-beater', { live: true, ageMs: 10 * MINUTE });
      const job = await seedRunning(exec, { instanceId: 'slow-beater', heartbeatAgeMs: 0 });
      expect(await leader.task(OrphanRescueTask).run()).toBe(0);
      expect(await leasesOf(exec, job.id)).toEqual(['1@slow-beater']);
    },
  );

  it("the leases of a dead instance are retried with the dead instance's settings", async () => {
    // Lock gone and row stale past its own heartbeatStaleAfter: dead on the first sweep (two signals).
    await copyOfPatient('dead-patient', { live: false, ageMs: 2 * HOUR });
    const job = await seedRunning(exec, { instanceId: 'dead-patient', queue: 'reports' });
    expect(await leader.task(OrphanRescueTask).run()).toBe(1);
    const row = await readJob(exec, job.id);
    expect(row).toMatchObject({ state: 'retryable', errors: [{ error: RescueErrors.instanceDied('dead-patient') }] });
    expect(row!.retry_delay_ms).toBeCloseTo(20 * MINUTE, 3);
  });
});
