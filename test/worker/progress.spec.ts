import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AwaErrorCodes, JobHandler, JobValueError, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { DEADLINE_RESCUE, type RescueTask } from '../../lib/maintenance/tasks/rescue.task.js';
import { watchResultWrites } from './result-writes.js';
import { useTestApp } from '../support/block-app.js';
import { finishedJob } from '../support/job-waits.js';
import { waitFor } from '../support/test-app.js';

/** A promise with its resolve, opened by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

@Injectable()
class Reporters {
  gates = new Map<string, ReturnType<typeof gate>>();
  returnedValues: unknown[] = [];
  refusals: unknown[] = [];

  gateOf(name: string) {
    if (!this.gates.has(name)) this.gates.set(name, gate());
    return this.gates.get(name)!;
  }

  /** Reports 1000 values in one go, then waits: only the last is written, once. */
  @JobHandler('progress.burst')
  async burst(job: Job) {
    for (let i = 1; i <= 1_000; i++) this.returnedValues.push(job.progress({ step: i, of: 1_000 }));
    await this.gateOf(`burst:${job.id}`).opened;
  }

  /** Reports and returns at once: the last progress lands before the completion. */
  @JobHandler('progress.last')
  last(job: Job) {
    job.progress({ phase: 'first' });
    job.progress({ phase: 'last' });
    return 'finished';
  }

  @JobHandler('progress.refused')
  refused(job: Job) {
    for (const value of [{ n: 1n }, 'x'.repeat(200), Symbol('s')]) {
      try {
        job.progress(value);
      } catch (error) {
        this.refusals.push(error);
      }
    }
  }

  /**
   * Attempt 1 reports progress, then (once the test rescued its lease and attempt 2 reported its
   * own) reports again and returns: neither late write may land. Attempt 2 returns once told.
   */
  @JobHandler('progress.fenced')
  async fenced(job: Job) {
    if (job.attempt === 1) {
      job.progress({ attempt: 1 });
      await this.gateOf(`late:${job.id}`).opened;
      job.progress({ attempt: 1, late: true });
      return { from: 1 };
    }
    job.progress({ attempt: 2 });
    await this.gateOf(`finish:${job.id}`).opened;
    return { from: 2 };
  }
}

/** job.progress(value): a small JSON value on the running job, written batched and fenced. */
describe('progress', () => {
  const block = useTestApp({
    providers: [Reporters],
    awa: {
      maxProgressBytes: 100,
      queues: { default: { pollInterval: 100, retryBaseDelay: 20, retryMaxDelay: 100 } },
    },
  });
  let app: TestingModule;
  let producer: QueueProducer;
  let reporters: Reporters;
  let dataSource: DataSource;

  beforeAll(async () => {
    app = block.app;
    producer = app.get(QueueProducer);
    reporters = app.get(Reporters);
    dataSource = app.get(DataSource);
    // Counts the statements that write a job's progress.
    await dataSource.query(`
      CREATE TABLE public.progress_writes (job_id bigint, progress jsonb);
      CREATE FUNCTION public.count_progress() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO public.progress_writes VALUES (NEW.id, NEW.progress); RETURN NULL; END $$;
      CREATE TRIGGER count_progress AFTER UPDATE OF progress ON awa.jobs
        FOR EACH ROW EXECUTE FUNCTION public.count_progress();`);
  });

  const progressOf = async (id: string) => (await producer.getJob(id))?.progress;
  const finished = (id: string) => finishedJob(producer, id);

  it('is readable through getJob while the job runs; many reports in a row are one write of the last', async () => {
    const { id } = await producer.enqueue('progress.burst', {});
    await waitFor(async () => (await progressOf(id)) !== null, 20_000, 'the progress');
    expect(await producer.getJob(id)).toMatchObject({ state: 'running', progress: { step: 1_000, of: 1_000 } });
    expect(reporters.returnedValues).toEqual(Array(1_000).fill(undefined)); // progress() returns nothing, at once
    reporters.gateOf(`burst:${id}`).open();
    expect(await finished(id)).toMatchObject({ state: 'completed', progress: { step: 1_000, of: 1_000 } });
    const writes = await dataSource.query(`SELECT progress FROM public.progress_writes WHERE job_id = $1`, [id]);
    expect(writes).toEqual([{ progress: { step: 1_000, of: 1_000 } }]);
  });

  it('writes the last progress of a handler that returns right after reporting it', async () => {
    const { id } = await producer.enqueue('progress.last', {});
    expect(await finished(id)).toMatchObject({ state: 'completed', progress: { phase: 'last' }, output: 'finished' });
  });

  it('refuses a value that is not JSON or is over maxProgressBytes, with a JobValueError, at the call', async () => {
    const { id } = await producer.enqueue('progress.refused', {});
    expect(await finished(id)).toMatchObject({ state: 'completed', progress: null });
    expect(reporters.refusals).toHaveLength(3);
    for (const error of reporters.refusals) {
      expect(error).toBeInstanceOf(JobValueError);
      expect(error).toMatchObject({ code: AwaErrorCodes.invalidJobValue, field: 'progress' });
    }
    expect((reporters.refusals[1] as Error).message).toContain('maxProgressBytes');
  });

  it("fences a rescued attempt: its later progress and its output never land, the new attempt's do", async () => {
    const writes = watchResultWrites(app);
    try {
      const { id } = await producer.enqueue('progress.fenced', {});
      await waitFor(async () => (await progressOf(id)) !== null, 20_000, 'the progress of attempt 1');
      const first = await producer.getJob(id);
      expect(first).toMatchObject({ state: 'running', attempt: 1, progress: { attempt: 1 } });
      // The maintenance leader rescues attempt 1 as past its deadline, while its handler still runs.
      await dataSource.query(
        `UPDATE awa.active_leases SET deadline_at = now() - interval '1 second' WHERE job_id = $1`,
        [id],
      );
      await app.get<RescueTask>(DEADLINE_RESCUE.token).run();
      // Attempt 2 runs and reports.
      await waitFor(
        async () => JSON.stringify(await progressOf(id)) === '{"attempt":2}',
        20_000,
        'the progress of attempt 2',
      );
      // Now attempt 1 reports again and returns: both are fenced out.
      reporters.gateOf(`late:${id}`).open();
      await waitFor(() => writes.held.has(`${id}:1`), 20_000, "attempt 1's result write");
      expect(await writes.held.get(`${id}:1`)).toBe(false);
      const second = await producer.getJob(id);
      expect(second).toMatchObject({ state: 'running', attempt: 2, progress: { attempt: 2 } });
      expect(BigInt(second!.runLease)).toBeGreaterThan(BigInt(first!.runLease));
      reporters.gateOf(`finish:${id}`).open();
      const job = await finished(id);
      expect(job).toMatchObject({
        state: 'completed',
        attempt: 2,
        runLease: second!.runLease,
        progress: { attempt: 2 },
        output: { from: 2 },
        errors: [{ attempt: 1, error: RescueErrors.deadlineExceeded }],
      });
      const progressWrites = await dataSource.query(`SELECT progress FROM public.progress_writes WHERE job_id = $1`, [
        id,
      ]);
      expect(progressWrites).toEqual([{ progress: { attempt: 1 } }, { progress: { attempt: 2 } }]);
    } finally {
      writes.restore();
    }
  });
});
