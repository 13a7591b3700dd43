import { Injectable } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, type AwaModuleOptions } from 'nestjs-awa';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';
import { AwaHealthMessages } from '../../lib/awa.messages.js';
import { createStatementGate } from '../support/statement-gate.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

@Injectable()
class Handlers {
  @JobHandler('noop')
  async noop() {}
}

describe('AwaHealthIndicator conditions', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  const apps: TestingModule[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const u = new URL(db.url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
  });
  afterEach(async () => {
    proxy.refuse(undefined);
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  async function indicator(awa: AwaModuleOptions, url = db.url): Promise<AwaHealthIndicator> {
    const app = await startTestApp({ url, awa, providers: [Handlers], imports: [TerminusModule, AwaHealthModule] });
    apps.push(app);
    return app.get(AwaHealthIndicator);
  }
  const statusOf = async (health: AwaHealthIndicator, key?: string) => (await health.isHealthy(key))[key ?? 'awa']!;

  it('is down while a claim loop has not ticked for 3 poll intervals + 2 s, and up once it ticks again', async () => {
    const health = await indicator({});
    await waitFor(async () => (await statusOf(health)).status === 'up', 15_000, 'up');
    const gate = await createStatementGate(db.url, 4242, 'UPDATE', 'awa.jobs');
    try {
      await gate.close(); // the claim statement (an UPDATE of awa.jobs) now waits at the gate
      const down = await waitFor(
        async () => {
          const s = await statusOf(health);
          return s.status === 'down' ? s : null;
        },
        15_000,
        'down',
      );
      expect(down).toMatchObject({ connected: true, queues: { default: { stalled: true } } });
      expect(down.problems).toEqual([expect.stringContaining('the claim loop of queue "default" has not ticked for')]);
      await gate.open();
      await waitFor(async () => (await statusOf(health)).status === 'up', 15_000, 'up again');
    } finally {
      await gate.remove();
    }
  });

  it('behind a transaction pooler, counts as connected while the database answers its probe', async () => {
    const health = await indicator(
      { connectionMode: 'transaction-pooler', heartbeatInterval: 100, heartbeatStaleAfter: 60_000 },
      TcpProxy.url(db.url, proxy),
    );
    const up = await waitFor(async () => {
      const s = await statusOf(health, 'queue');
      return s.status === 'up' ? s : null;
    });
    expect(up).toMatchObject({ connected: true, mode: 'running' });

    proxy.refuse(() => true);
    proxy.reset();
    const down = await waitFor(async () => {
      const s = await statusOf(health, 'queue');
      return s.connected === false ? s : null;
    });
    expect(down.status).toBe('down');
    expect(down.problems).toContain(AwaHealthMessages.notConnected('transaction-pooler'));

    proxy.refuse(undefined);
    await waitFor(async () => (await statusOf(health, 'queue')).status === 'up', 15_000, 'up again');
  });

  it('in testing mode, is up without a session or workers, and says so', async () => {
    const health = await indicator({ ...FAST_OPTIONS, testing: true });
    const result = await health.isHealthy();
    expect(result.awa).toMatchObject({ status: 'up', mode: 'testing', connected: false, leader: false, queues: {} });
  });
});
