import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, OnJobEvent, QueueProducer, type JobEvent } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const seen: Array<{ jobId: string; event: string; state: string }> = [];

@Injectable()
class Steps {
  @JobHandler('wfe.ok') ok() {}

  @JobHandler('wfe.broken') broken() {
    throw new Error('broken step');
  }

  @OnJobEvent(['completed', 'failed', 'cancelled'], { group: 'workflow-audit', kinds: ['wfe.*'] })
  audit(event: JobEvent) {
    seen.push({ jobId: event.jobId, event: event.event, state: event.state });
  }
}

/**
 * Durable events (docs/durable-events.md) of workflow steps (docs/workflows.md): a step that a failed
 * dependency cancels or fails writes its event in the statement that ends it, as every transition does.
 */
describe('durable events of workflow steps ended by a dependency', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [Steps],
      awa: { jobEvents: { pollInterval: 50, retryBaseDelay: 50, retryMaxDelay: 100 } },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('delivers the failed dependency, the cascade it cancels and fails, and the step that ignores it', async () => {
    const graph = await app.get(QueueProducer).enqueueGraph([
      { ref: 'render', kind: 'wfe.broken', args: {}, maxAttempts: 1 },
      { ref: 'merge', kind: 'wfe.ok', args: {}, dependsOn: ['render'] },
      { ref: 'mail', kind: 'wfe.ok', args: {}, dependsOn: ['merge'] },
      { ref: 'audit', kind: 'wfe.ok', args: {}, dependsOn: ['render'], onDependencyFailure: 'fail' },
      { ref: 'cleanup', kind: 'wfe.ok', args: {}, dependsOn: ['render'], onDependencyFailure: 'ignore' },
    ]);
    const ids = graph.ids;
    const events = await waitFor(() => (seen.length >= 5 ? [...seen] : undefined), 20_000, 'five events');
    const byId = Object.fromEntries(events.map((e) => [e.jobId, `${e.event}:${e.state}`]));
    expect(byId).toEqual({
      [ids.render!]: 'failed:failed',
      [ids.merge!]: 'cancelled:cancelled',
      [ids.mail!]: 'cancelled:cancelled',
      [ids.audit!]: 'failed:failed',
      [ids.cleanup!]: 'completed:completed',
    });
    expect(events).toHaveLength(5);
  });
});
