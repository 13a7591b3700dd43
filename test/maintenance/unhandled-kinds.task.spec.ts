import { jest } from '@jest/globals';
import { Injectable, Logger } from '@nestjs/common';
import { JobHandler, MaintenanceService } from 'nestjs-awa';
import { seedJob } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

@Injectable()
class MailHandlers {
  @JobHandler('mail.send', { queue: 'mail' })
  async send(): Promise<void> {}
}

/** A job of a kind no live instance handles is never claimed: the leader names it, with its count. */
describe('the leader warns of kinds that no live instance handles', () => {
  const ctx = useQuietApp(
    { queues: { mail: {} }, heartbeatStaleAfter: 30_000 },
    {
      providers: [MailHandlers],
      reset: (sql) => sql(`DELETE FROM awa.instances WHERE hostname = 'seeded'`),
    },
  );
  const { exec } = ctx;
  const service = () => ctx.app.get(MaintenanceService);
  let warnings: string[] = [];
  let spy: jest.SpiedFunction<Logger['warn']>;
  beforeEach(() => {
    warnings = [];
    spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
  });
  afterEach(() => spy.mockRestore());
  const unhandledWarnings = () => warnings.filter((w) => w.includes('no live instance'));

  async function seed(kind: string, queue: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) await seedJob(exec, { kind, queue });
  }

  it(
    'each sweep logs one warning per (queue, kind) that has available ' + 'jobs and no live handler, with its count',
    async () => {
      await seed('mail.sned', 'mail', 3); // a misspelled kind
      await seed('mail.send', 'default', 2); // a kind handled here, but in another queue
      await seed('mail.send', 'mail', 1); // handled: claimed by this app
      await service().sweep();
      expect(unhandledWarnings().sort()).toEqual([
        expect.stringMatching(/^2 available job\(s\) of kind "mail\.send" in queue "default".*no live instance/),
        expect.stringMatching(/^3 available job\(s\) of kind "mail\.sned" in queue "mail".*no live instance/),
      ]);
      warnings = [];
      await service().sweep();
      expect(unhandledWarnings()).toHaveLength(2);
    },
  );

  it(
    'a kind handled by another live instance is not reported; one ' + 'handled only by a stale instance row is',
    async () => {
      await seed('report.render', 'reports', 4);
      await seed('invoice.send', 'billing', 1);
      await exec(`INSERT INTO awa.instances (id, hostname, pid, lock_key, handlers, heartbeat_at) VALUES
                ('live', 'seeded', 1, 1, '{"report.render": "reports"}', now()),
                ('stale', 'seeded', 2, 2, '{"invoice.send": "billing"}', now() - interval '1 hour')`);
      await service().sweep();
      expect(unhandledWarnings()).toEqual([
        expect.stringMatching(/^1 available job\(s\) of kind "invoice\.send" in queue "billing"/),
      ]);
    },
  );

  it('says nothing when every available job has a live handler', async () => {
    await exec(`INSERT INTO awa.instances (id, hostname, pid, lock_key, handlers, heartbeat_at)
                VALUES ('live', 'seeded', 1, 1, '{"report.render": "reports"}', now())`);
    await seed('report.render', 'reports', 2);
    await service().sweep();
    expect(unhandledWarnings()).toEqual([]);
  });
});
