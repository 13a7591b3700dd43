import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { FlowKeysCleanupTask } from '../../lib/maintenance/tasks/flow-keys-cleanup.task.js';
import { resetFlow, seedKeyRow } from '../flow/flow-fixture.js';
import { waitFor } from '../support/test-app.js';
import { useQuietApp } from './quiet-app.js';

@Injectable()
class KeyedHandler {
  @JobHandler('keyed.run', { queue: 'q' }) run() {}
}

describe('FlowKeysCleanupTask', () => {
  // rescueBatchSize 1: a batch of 10 keys. Queue q is keyed and has a worker.
  const ctx = useQuietApp(
    { rescueBatchSize: 1, queues: { default: {}, q: { keyConcurrency: 1, pollInterval: 200 } } },
    { providers: [KeyedHandler], reset: resetFlow },
  );
  const { exec } = ctx;
  const task = () => ctx.task(FlowKeysCleanupTask);
  const keys = async () => (await exec(`SELECT key FROM awa.flow_keys ORDER BY key`)).map((r) => r.key as string);

  it('deletes the idle keys and keeps the running, waiting, held, configured and recently served ones', async () => {
    await seedKeyRow(exec, 'idle');
    await seedKeyRow(exec, 'never served', { last_claimed_at: `'-infinity'` });
    await seedKeyRow(exec, 'running', { running: '1' });
    await seedKeyRow(exec, 'waiting', { has_waiting: 'true' });
    // Its job (of a kind no worker here handles: the app's claims pass over it and leave it waiting).
    await exec(`INSERT INTO awa.jobs (kind, queue, concurrency_key) VALUES ('unhandled.kind', 'q', 'waiting')`);
    await seedKeyRow(exec, 'held', { held_until: `now() + interval '10 minutes'` });
    await seedKeyRow(exec, 'configured', { max_running: '5' });
    await seedKeyRow(exec, 'recent', { last_claimed_at: `now() - interval '10 minutes'` });
    expect(await task().run()).toBe(2);
    expect(await keys()).toEqual(['configured', 'held', 'recent', 'running', 'waiting']);
    expect(await task().run()).toBe(0);
  });

  it('never deletes the row of a key that has an available job, whatever its flags say', async () => {
    await exec(`INSERT INTO awa.jobs (kind, queue, concurrency_key) VALUES ('unhandled.kind', 'q', 'stranded')`);
    // As an older claim left a key whose jobs it could not see: not waiting, never served.
    await exec(`UPDATE awa.flow_keys SET has_waiting = false, last_claimed_at = '-infinity' WHERE key = 'stranded'`);
    expect(await task().run()).toBe(0);
    expect(await keys()).toEqual(['stranded']);
  });

  it('deletes at most 10 × rescueBatchSize keys per run', async () => {
    await exec(`INSERT INTO awa.flow_keys (queue, key, has_waiting, last_claimed_at)
                SELECT 'q', 'key-' || i, false, now() - interval '1 day' FROM generate_series(1, 12) i`);
    expect(await task().run()).toBe(10);
    expect(await task().run()).toBe(2);
    expect(await keys()).toEqual([]);
  });

  it('a keyed job enqueued after its key row was deleted runs', async () => {
    await seedKeyRow(exec, 'tenant-1');
    expect(await task().run()).toBe(1);
    const { id } = await ctx.app
      .get(QueueProducer)
      .enqueue('keyed.run', {}, { queue: 'q', concurrencyKey: 'tenant-1' });
    const job = await waitFor(async () => {
      const j = await ctx.app.get(QueueProducer).getJob(id);
      return j?.state === 'completed' ? j : null;
    });
    expect(job.attempt).toBe(1);
    const [row] = await exec(
      `SELECT running, last_claimed_at > '-infinity' AS served FROM awa.flow_keys WHERE key = $1`,
      ['tenant-1'],
    );
    expect(row).toEqual({ running: 0, served: true });
  });
});
