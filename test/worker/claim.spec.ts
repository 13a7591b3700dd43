import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { useTestApp } from '../support/block-app.js';
import { waitFor } from '../support/test-app.js';
import { setTimeout as sleep } from 'node:timers/promises';

@Injectable()
class Recorder {
  order: number[] = [];
  running = 0;
  maxRunning = 0;
  startedAt = new Map<string, Date>();

  @JobHandler('ordered', { queue: 'serial' })
  ordered(job: Job<{ n: number }>) {
    this.order.push(job.args.n);
  }

  @JobHandler('busy', { queue: 'wide' })
  async busy() {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    await sleep(50);
    this.running--;
  }

  @JobHandler('later')
  later(job: Job) {
    this.startedAt.set(job.id, new Date());
  }

  drained: string[] = [];
  @JobHandler('drained', { queue: 'backlog' })
  drain(job: Job) {
    this.drained.push(job.id);
  }
}

describe('claiming', () => {
  const block = useTestApp({
    providers: [Recorder],
    awa: {
      queues: {
        default: { pollInterval: 100 },
        serial: { concurrency: 1, pollInterval: 100 },
        wide: { concurrency: 3, prefetch: 5 },
        backlog: { concurrency: 8, prefetch: 50 },
      },
    },
  });
  let app: TestingModule;
  let producer: QueueProducer;
  let recorder: Recorder;

  beforeAll(() => {
    app = block.app;
    producer = app.get(QueueProducer);
    recorder = app.get(Recorder);
  });

  const state = async (id: string) => (await producer.getJob(id))?.state;

  it('runs jobs by priority, then run_at, then id', async () => {
    // One transaction, so no job is claimed before all exist.
    const priorities = [5, -2, 0, 5, -2, 3, 0, 0];
    const jobs = await app.get(DataSource).transaction((manager) =>
      producer.enqueueMany(
        priorities.map((p, n) => ({ kind: 'ordered', args: { n }, priority: p })),
        { manager },
      ),
    );
    await waitFor(async () => (await Promise.all(jobs.map((j) => state(j.id)))).every((s) => s === 'completed'));
    const expected = priorities
      .map((p, n) => ({ p, n }))
      .sort((a, b) => a.p - b.p || a.n - b.n)
      .map((x) => x.n);
    expect(recorder.order).toEqual(expected);
  });

  it('never runs more handlers of a queue at once than its concurrency, prefetch or not', async () => {
    const jobs = await producer.enqueueMany(Array.from({ length: 15 }, () => ({ kind: 'busy', args: {} })));
    await waitFor(async () => (await Promise.all(jobs.map((j) => state(j.id)))).every((s) => s === 'completed'));
    expect(recorder.maxRunning).toBeGreaterThanOrEqual(1);
    expect(recorder.maxRunning).toBeLessThanOrEqual(3);
  });

  it('runs a scheduled job once its runAt has passed, not before', async () => {
    const runAt = new Date(Date.now() + 1_000);
    const job = await producer.enqueue('later', {}, { runAt });
    expect(await state(job.id)).toBe('scheduled');
    await waitFor(async () => (await state(job.id)) === 'completed');
    const stored = await producer.getJob(job.id);
    expect(stored!.attemptedAt!.getTime()).toBeGreaterThanOrEqual(runAt.getTime() - 5); // DB clock vs ours
    expect(recorder.startedAt.has(job.id)).toBe(true);
  });

  it('leaves a job of a kind no instance handles available, untouched', async () => {
    const orphan = await producer.enqueue('nobody.handles.this', { keep: true });
    const marker = await producer.enqueue('later', {});
    // Once a later job of the same queue has run, the workers have polled past the unknown kind.
    await waitFor(async () => (await state(marker.id)) === 'completed');
    await sleep(300); // a fixed window on purpose: it proves nothing happens, as more polls pass the job by
    expect(await producer.getJob(orphan.id)).toMatchObject({
      state: 'available',
      attempt: 0,
      runLease: '0',
      errors: [],
    });
  });

  it('drains a backlog while an old snapshot is held, and still runs a job that appears behind the claim cursor', async () => {
    // The snapshot keeps the claimed jobs' index entries alive: claims read on from their cursor (ClaimCursor).
    const holder = app.get(DataSource).createQueryRunner();
    await holder.connect();
    await holder.startTransaction('REPEATABLE READ');
    try {
      await holder.query('SELECT count(*) FROM awa.jobs');
      const backlog = await producer.enqueueMany(Array.from({ length: 2_000 }, () => ({ kind: 'drained', args: {} })));
      await waitFor(() => recorder.drained.length >= 500, 30_000, 'a quarter of the backlog');
      // A higher priority and an earlier run_at: before every key claimed so far.
      const behind = await producer.enqueue('drained', {}, { priority: -5, runAt: new Date(Date.now() - 3_600_000) });
      await waitFor(
        () => recorder.drained.length >= backlog.length + 1,
        30_000,
        'the backlog and the job behind the cursor',
      );
      expect(recorder.drained).toContain(behind.id);
      expect(new Set(recorder.drained).size).toBe(backlog.length + 1);
      // Completions are written in batches after the handler returns.
      await waitFor(
        async () => (await state(behind.id)) === 'completed',
        10_000,
        'the job behind the cursor completed',
      );
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
  });
});
