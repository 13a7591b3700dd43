import type { TestingModule } from '@nestjs/testing';
import { QueueProducer, type AwaModuleOptions, type QueueOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';
import { maxInWindow, maxOverlap } from './flow-fixture.js';

/**
 * Every lease's life on the database clock: its row is stamped when the claim inserts it and when any
 * path (completion, rescue of a killed process, ...) deletes it. A handler runs inside its lease, so
 * these intervals contain the handlers' own; they are the attempts as the limits count them.
 */
const LEASE_LOG = [
  `CREATE TABLE flow_leases (job_id bigint, run_lease bigint, key text, claimed_at timestamptz,
     started timestamptz, ended timestamptz, PRIMARY KEY (job_id, run_lease))`,
  `CREATE FUNCTION flow_lease_started() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
     INSERT INTO flow_leases VALUES (NEW.job_id, NEW.run_lease, NEW.concurrency_key, NEW.claimed_at,
       clock_timestamp()); RETURN NULL; END $$`,
  `CREATE FUNCTION flow_lease_ended() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
     UPDATE flow_leases SET ended = clock_timestamp() WHERE job_id = OLD.job_id AND run_lease = OLD.run_lease;
     RETURN NULL; END $$`,
  `CREATE TRIGGER flow_lease_started AFTER INSERT ON awa.active_leases FOR EACH ROW
     EXECUTE FUNCTION flow_lease_started()`,
  `CREATE TRIGGER flow_lease_ended AFTER DELETE ON awa.active_leases FOR EACH ROW EXECUTE FUNCTION flow_lease_ended()`,
];

const ms = (column: string) => `extract(epoch FROM ${column})::float8 * 1000`;

/** 3 worker processes (test/fixtures/worker-app.ts) on queue 'default' with `queue` options. */
function useFleet(queue: QueueOptions) {
  const fleet = {
    db: undefined as unknown as TestDatabase,
    app: undefined as unknown as TestingModule,
    workers: [] as WorkerProcess[],
  };
  const options: AwaModuleOptions = {
    ...FAST_OPTIONS,
    queues: { default: { ...FAST_OPTIONS.queues!.default, ...queue } },
  };
  beforeAll(async () => {
    fleet.db = await createTestDatabase();
    // The test's app only produces and leads maintenance; it has no handlers.
    fleet.app = await startTestApp({ url: fleet.db.url });
    for (const statement of LEASE_LOG) await fleet.app.get(DataSource).query(statement);
    for (let i = 0; i < 3; i++) fleet.workers.push(new WorkerProcess(fleet.db.url, options));
    await Promise.all(fleet.workers.map((w) => w.ready()));
  }, 120_000);
  afterAll(async () => {
    fleet.workers.forEach((w) => w.kill('SIGKILL'));
    await fleet.app?.close();
    await fleet.db?.drop();
  });
  return fleet;
}

const completed = (fleet: { app: TestingModule }, count: number) =>
  waitFor(
    async () =>
      (
        await fleet.app.get(DataSource).query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed'`)
      )[0].n === count,
    60_000,
    `${count} completed jobs`,
  );

describe('key concurrency across 3 worker processes, one of them SIGKILLed', () => {
  const fleet = useFleet({ concurrency: 20, keyConcurrency: 3 });

  it('never has more than 3 overlapping attempts of a key, also across the kill and its rescue', async () => {
    const producer = fleet.app.get(QueueProducer);
    const items = Array.from({ length: 300 }, (_, i) => ({
      kind: 'fixture.sleep',
      args: { ms: 100 },
      concurrencyKey: `tenant-${i % 50}`,
    }));
    await producer.enqueueMany(items);
    const victim = fleet.workers[0]!;
    await victim.waitForLine(/^START /);
    victim.kill('SIGKILL');
    await victim.exit();
    await completed(fleet, 300);
    const leases = await fleet.app
      .get(DataSource)
      .query(`SELECT key AS "group", ${ms('started')} AS start, ${ms('ended')} AS "end" FROM flow_leases`);
    // Some attempts were rescued (their lease ended without a completion) and ran again.
    expect(leases.length).toBeGreaterThan(300);
    expect(leases.every((l: { end: number | null }) => l.end !== null)).toBe(true);
    // At most 3, and more than 1 so the limit was actually exercised (under load a run may peak at 2).
    expect(maxOverlap(leases)).toBeLessThanOrEqual(3);
    expect(maxOverlap(leases)).toBeGreaterThan(1);
  }, 90_000);
});

describe('a rate limit across 3 worker processes', () => {
  const fleet = useFleet({ concurrency: 50, rateLimit: { limit: 200, period: 1_000 } });

  it('starts no more than 200 attempts in any 1,000 ms window of the recorded start times', async () => {
    await fleet.app
      .get(QueueProducer)
      .enqueueMany(Array.from({ length: 700 }, () => ({ kind: 'fixture.sleep', args: { ms: 1 } })));
    await completed(fleet, 700);
    const starts = await fleet.app.get(DataSource).query(`SELECT ${ms('claimed_at')} AS at FROM flow_leases`);
    // Every claimed lease counts, also a job's given back unstarted for not being entered in time.
    expect(starts.length).toBeGreaterThanOrEqual(700);
    expect(
      maxInWindow(
        starts.map((s: { at: number }) => s.at),
        1_000,
      ),
    ).toBeLessThanOrEqual(200);
  }, 90_000);
});
