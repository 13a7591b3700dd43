import { Injectable, type INestApplication } from '@nestjs/common';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import pg from 'pg';
import { AwaHealthMessages } from '../../lib/awa.messages.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { getHealth, HeldJob, startHealthApp, type HealthResponse } from './health-app.js';

@Injectable()
class Handlers {
  constructor(readonly held: HeldJob) {}

  @JobHandler('hold')
  async hold() {
    await this.held.run();
  }
}

const sessionPacket = (id: string) => (first: string) => first.includes(`awa:${id}`);

describe('AwaHealthIndicator on a real /health endpoint', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let app: INestApplication | undefined;
  let base: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const u = new URL(db.url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
    // A long shutdownTimeout: the app stays in its shutdown, serving /health, until the test releases the job.
    const options = { ...FAST_OPTIONS, shutdownTimeout: 120_000 };
    ({ app, base } = await startHealthApp(TcpProxy.url(db.url, proxy), options, [HeldJob, Handlers]));
  });
  afterAll(async () => {
    proxy?.refuse(undefined);
    app?.get(HeldJob).release();
    await app?.close();
    await proxy?.close();
    await db?.drop();
  });

  const healthWith = (status: number) => async (): Promise<HealthResponse | null> => {
    const res = await getHealth(base);
    return res.status === status ? res : null;
  };

  it('is 200 while connected, 503 while the instance session is down, and 200 again once it reconnects', async () => {
    const up = await waitFor(healthWith(200), 15_000, '/health 200');
    const awa = up.body.info!.awa!;
    expect(awa).toMatchObject({ status: 'up', connected: true, shuttingDown: false, mode: 'running' });
    expect(Object.keys(awa.queues)).toEqual(['default']);
    expect(awa.problems).toBeUndefined();

    // Kill the session's backend and keep it from reconnecting until we allow it.
    proxy.refuse(sessionPacket(awa.instanceId));
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
        [`awa:${awa.instanceId}`],
      );
      expect(killed.rowCount).toBe(1);
    } finally {
      await admin.end();
    }
    const down = await waitFor(healthWith(503), 15_000, '/health 503');
    expect(down.body.status).toBe('error');
    expect(down.body.error!.awa).toMatchObject({
      status: 'down',
      instanceId: awa.instanceId,
      connected: false,
      leader: false,
      problems: [AwaHealthMessages.notConnected('direct')],
    });

    proxy.refuse(undefined);
    const back = await waitFor(healthWith(200), 15_000, '/health 200 after the reconnect');
    expect(back.body.info!.awa).toMatchObject({ status: 'up', instanceId: awa.instanceId, connected: true });
  });

  it('is 503 while the app shuts down', async () => {
    await waitFor(healthWith(200), 15_000, '/health 200');
    const running = app!;
    await running.get(QueueProducer).enqueue('hold', {});
    await waitFor(() => running.get(HeldJob).started === 1, 15_000, 'the held job to start');

    const closing = running.close(); // waits for the held handler (shutdownTimeout) before the server closes
    app = undefined;
    const down = await waitFor(healthWith(503), 15_000, '/health 503 during shutdown');
    expect(down.body.error!.awa).toMatchObject({ status: 'down', shuttingDown: true });
    expect(down.body.error!.awa!.problems).toContain(AwaHealthMessages.shuttingDown);
    running.get(HeldJob).release();
    await closing;
  });
});
