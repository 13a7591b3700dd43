import { Injectable } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AbortReasons, AwaModule, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { InstanceSession, MAX_RECONNECT_DELAY_MS } from '../../lib/instance/instance-session.js';
import { applyMigrations } from '../sql/sql-fixture.js';
import { breakInstanceWrites, repairInstanceWrites } from './instance-writes.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';

/** Long heartbeats: these tests decide when the instance row is written. */
const OPTIONS = {
  ...FAST_OPTIONS,
  heartbeatInterval: 3_600_000,
  heartbeatStaleAfter: 7_200_000,
  maintenanceInterval: 3_600_000,
};

@Injectable()
class Blocked {
  release!: () => void;
  private readonly gate = new Promise<void>((r) => (this.release = r));
  readonly aborted = new Map<string, unknown>();
  readonly started = new Set<string>();
  @JobHandler('session.blocked')
  async run(job: Job) {
    this.started.add(job.id);
    job.signal.addEventListener('abort', () => this.aborted.set(job.id, job.signal.reason));
    await this.gate;
  }
}

/** Server backends of dedicated instance sessions (application_name awa:<id>) in this database. */
const sessionBackends = async (url: string, id = '%') =>
  (
    await queryOnce<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE $1`,
      [`awa:${id}`],
    )
  )[0]!.n;

/** The most session backends seen at once while watching for `ms` (a "never more than" check needs a window). */
async function mostBackendsWithin(url: string, ms: number, id?: string): Promise<number> {
  let most = 0;
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    most = Math.max(most, await sessionBackends(url, id));
  }
  return most;
}

const sessionPacket = (id: string) => (first: string) => first.includes(`awa:${id}`);

describe('InstanceSession', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  const apps: TestingModule[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    await applyMigrations(db.url);
    const u = new URL(db.url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
  });
  afterEach(async () => {
    proxy.thaw();
    proxy.refuse(undefined);
    await repairInstanceWrites(db.url);
    for (const app of apps.splice(0)) {
      try {
        app.get(Blocked, { strict: false }).release();
      } catch {
        // an app without the handler
      }
      await app.close();
    }
  });
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  async function start(
    options: object = {},
    providers: Array<typeof Blocked> = [],
  ): Promise<{ app: TestingModule; session: InstanceSession }> {
    const app = await startTestApp({ url: TcpProxy.url(db.url, proxy), awa: { ...OPTIONS, ...options }, providers });
    apps.push(app);
    return { app, session: app.get(InstanceSession, { strict: false }) };
  }

  it('closes everything it opened when the boot fails, and never comes back by itself', async () => {
    // One failed write: the boot fails, and nothing would stop a later attempt from succeeding.
    await breakInstanceWrites(db.url, 1);
    const opened = proxy.opened(sessionPacket(''));
    // As NestFactory does: a failed init() leaves the app as it is (no close()), its DataSource open.
    const app = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: TcpProxy.url(db.url, proxy),
          autoLoadEntities: true,
          logging: false,
        }),
        ScheduleModule.forRoot(),
        AwaModule.forRoot(OPTIONS),
      ],
    }).compile();
    try {
      await expect(app.init()).rejects.toThrow(/instance writes are broken/);
      expect(proxy.opened(sessionPacket(''))).toBe(opened + 1);
      // No session connection is opened again over several reconnect delays, and none is left open.
      expect(await mostBackendsWithin(db.url, 3 * MAX_RECONNECT_DELAY_MS)).toBe(0);
      expect(proxy.opened(sessionPacket(''))).toBe(opened + 1);
      expect(await queryOnce(db.url, 'SELECT id FROM awa.instances')).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('keeps at most one dedicated connection when the first write after a reconnect fails', async () => {
    const { app, session } = await start();
    let reconnects = 0;
    session.onReconnect(() => reconnects++);
    await breakInstanceWrites(db.url, 1);
    expect(proxy.reset(sessionPacket(session.id))).toBe(1);
    await waitFor(() => reconnects > 0 && session.connected, 15_000, 'the session to come back');
    expect(await mostBackendsWithin(db.url, 3 * MAX_RECONNECT_DELAY_MS, session.id)).toBe(1);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    await waitFor(async () => (await sessionBackends(db.url, session.id)) === 0, 10_000, 'the session to close');
    // And nothing reopens it.
    expect(await mostBackendsWithin(db.url, 2 * MAX_RECONNECT_DELAY_MS, session.id)).toBe(0);
  });

  it('notices a session that went silent, and takes its liveness lock back on a new connection', async () => {
    const { session } = await start();
    let reconnects = 0;
    session.onReconnect(() => reconnects++);
    // The connection stays open at both ends, but nothing gets through: a half-open connection.
    expect(proxy.freeze(sessionPacket(session.id))).toBe(1);
    await waitFor(() => reconnects > 0 && session.connected, 15_000, 'the session to notice and reconnect');
    // Its old backend (still holding the old lock) is gone, and the lock it registered is held.
    await waitFor(async () => (await sessionBackends(db.url, session.id)) === 1, 10_000, 'one session backend');
    const [row] = await queryOnce<{ held: boolean }>(
      db.url,
      `
      SELECT EXISTS (SELECT 1 FROM pg_locks pl JOIN pg_stat_activity a ON a.pid = pl.pid
                      WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objid = i.lock_key::oid
                        AND a.application_name = 'awa:' || i.id) AS held
        FROM awa.instances i WHERE i.id = $1`,
      [session.id],
    );
    expect(row).toEqual({ held: true });
  });

  it('aborts its handlers once its session has been lost for longer than heartbeatStaleAfter', async () => {
    const { app, session } = await start({ heartbeatInterval: 200, heartbeatStaleAfter: 1_500 }, [Blocked]);
    const { id } = await app.get(QueueProducer).enqueue('session.blocked', {});
    const handlers = app.get(Blocked);
    await waitFor(() => handlers.started.has(id), 15_000, 'the handler to start');
    // Its pool keeps working (heartbeats go on), but the session is silent and cannot come back.
    proxy.refuse(sessionPacket(session.id));
    proxy.freeze(sessionPacket(session.id));
    const reason = await waitFor(() => handlers.aborted.get(id), 20_000, 'the handler to be aborted');
    expect(reason).toBe(AbortReasons.leaseLost);
  });
});
