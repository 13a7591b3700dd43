import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, MaintenanceService, QueueAdmin, QueueProducer, type JobState } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { AwaMetricNames as N } from '../../lib/telemetry/telemetry.metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';
import { registerOtelSdk, sumOf, type OtelSdk } from './otel-sdk.js';

@Injectable()
class WorkflowHandlers {
  @JobHandler('wft.ok') ok() {}

  /** In a rate-limited queue: claimed through awa.claim_flow. */
  @JobHandler('wft.flow', { queue: 'flow' }) flow() {}

  @JobHandler('wft.bad') bad() {
    throw new Error('always bad');
  }
}

/** Workflows through the real OTel SDK: the workflow id on consumer spans, and the count of ended workflows. */
describe('AwaTelemetryModule and workflows', () => {
  let db: TestDatabase;
  let sdk: OtelSdk;
  let app: TestingModule;
  let producer: QueueProducer;
  const stateOf = async (id: string) => (await producer.getJob(id))?.state;
  const until = (id: string, state: JobState) => waitFor(async () => (await stateOf(id)) === state, 15_000, state);
  const ended = async (outcome: string) => sumOf((await sdk.collect()).get(N.workflowEnded), { outcome });

  beforeAll(async () => {
    db = await createTestDatabase();
    sdk = registerOtelSdk();
    app = await startTestApp({
      url: db.url,
      providers: [WorkflowHandlers],
      imports: [AwaTelemetryModule.forRoot() as never],
      awa: {
        queues: {
          default: { pollInterval: 200 },
          flow: { pollInterval: 200, rateLimit: { limit: 1_000, period: 1_000 } },
        },
      },
    });
    producer = app.get(QueueProducer);
    // The leader's first collection opens the window of the count.
    await waitFor(() => app.get(MaintenanceService).isLeader, 15_000, 'leadership');
    await sdk.collect();
  });
  afterAll(async () => {
    await app?.close();
    await sdk?.shutdown();
    await db?.drop();
  });

  it('puts the workflow id on the consumer spans of workflow jobs (plain and flow claims), not on plain jobs', async () => {
    const plain = await producer.enqueue('wft.ok', {});
    const { workflowId, ids } = await producer.enqueueGraph([
      { ref: 'a', kind: 'wft.ok', args: {} },
      { ref: 'b', kind: 'wft.flow', args: {}, dependsOn: ['a'] },
    ]);
    await until(ids.b!, 'completed');
    await until(plain.id, 'completed');
    const spanOf = (id: string) =>
      sdk.spans().find((s) => s.name.startsWith('process') && s.attributes['messaging.message.id'] === id);
    await waitFor(() => spanOf(ids.b!) !== undefined && spanOf(plain.id) !== undefined, 15_000, 'the spans');
    expect(spanOf(ids.a!)!.attributes['awa.workflow.id']).toBe(workflowId);
    expect(spanOf(ids.b!)!.attributes['awa.workflow.id']).toBe(workflowId);
    expect(spanOf(plain.id)!.attributes).not.toHaveProperty('awa.workflow.id');
    await waitFor(async () => (await ended('completed')) === 1, 15_000, 'its count');
  });

  it('counts each ended workflow once, by outcome: completed, failed (a job failed), cancelled', async () => {
    const before = { completed: await ended('completed'), failed: await ended('failed') };
    const done = await producer.enqueueGraph([
      { ref: 'a', kind: 'wft.ok', args: {} },
      { ref: 'b', kind: 'wft.ok', args: {}, dependsOn: ['a'] },
    ]);
    // The failure cancels its dependent (policy cancel): the workflow failed.
    const failed = await producer.enqueueGraph([
      { ref: 'a', kind: 'wft.bad', args: {}, maxAttempts: 1 },
      { ref: 'b', kind: 'wft.ok', args: {}, dependsOn: ['a'] },
    ]);
    const cancelled = await producer.enqueueGraph([
      { ref: 'a', kind: 'wft.ok', args: {}, runAt: new Date(Date.now() + 3_600_000) },
      { ref: 'b', kind: 'wft.ok', args: {}, dependsOn: ['a'] },
    ]);
    // Still running: not counted.
    const running = await producer.enqueueGraph([
      { ref: 'a', kind: 'wft.ok', args: {}, runAt: new Date(Date.now() + 3_600_000) },
    ]);
    await app.get(QueueAdmin).cancelWorkflow(cancelled.workflowId);
    await until(done.ids.b!, 'completed');
    await until(failed.ids.b!, 'cancelled');
    await until(cancelled.ids.b!, 'cancelled');

    await waitFor(
      async () =>
        (await ended('completed')) - before.completed === 1 &&
        (await ended('failed')) - before.failed === 1 &&
        (await ended('cancelled')) === 1,
      15_000,
      'the counts',
    );
    // Later collections do not count them again.
    await sdk.collect();
    expect(await ended('completed')).toBe(before.completed + 1);
    expect(await ended('failed')).toBe(before.failed + 1);
    expect(await ended('cancelled')).toBe(1);
    expect(await stateOf(running.ids.a!)).toBe('scheduled');
    expect((await sdk.collect()).get(N.workflowEnded)?.descriptor.unit).toBe('{workflow}');
  });
});
