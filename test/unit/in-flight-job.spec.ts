import { jest } from '@jest/globals';
import { InFlightJob, type AttemptOutcome, type ClaimedJobRow } from '../../lib/worker/in-flight-job.js';

const row = (id = '1'): ClaimedJobRow => ({
  id,
  kind: 'unit.kind',
  queue: 'default',
  args: { n: 1 },
  attempt: 1,
  max_attempts: 3,
  priority: 0,
  run_lease: '7',
  created_ms: 0,
  run_at_ms: 0,
  workflow_id: null,
  traceparent: null,
});

/** A handler whose promise the test settles by hand. */
function controlled() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { handler: () => promise, resolve, reject };
}

/** Lets the promise callbacks queued so far run (fake timers do not fake microtasks). */
const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('InFlightJob', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it(
    'ends the attempt at its deadline when the handler has not ' + 'settled, and reports the late result once',
    async () => {
      const job = new InFlightJob(row());
      const late: AttemptOutcome[] = [];
      const { handler, resolve } = controlled();
      let outcome: AttemptOutcome | undefined;
      void job.run(handler, 1_000, (o) => late.push(o)).then((o) => (outcome = o));

      jest.advanceTimersByTime(999);
      await flush();
      expect(outcome).toBeUndefined();
      jest.advanceTimersByTime(1);
      await flush();
      expect(outcome).toEqual({ kind: 'deadline' });

      resolve();
      await flush();
      expect(late).toEqual([{ kind: 'returned' }]);
    },
  );

  it('resolves with the handler result before the deadline and clears the deadline timer', async () => {
    const job = new InFlightJob(row());
    const late: AttemptOutcome[] = [];
    const { handler, resolve } = controlled();
    const run = job.run(handler, 1_000, (o) => late.push(o));
    expect(jest.getTimerCount()).toBe(1);
    resolve();
    await expect(run).resolves.toEqual({ kind: 'returned' });
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(5_000);
    expect(late).toEqual([]);
  });

  it('lets the deadline win a settle that is due at the same instant, and reports the settle as late', async () => {
    const job = new InFlightJob(row());
    const late: AttemptOutcome[] = [];
    // The handler's timer is set after the deadline's (run() arms the deadline first), so both
    // are due together and the deadline fires first.
    const handler = () => new Promise<void>((_, reject) => setTimeout(() => reject(new Error('too late')), 1_000));
    const run = job.run(handler, 1_000, (o) => late.push(o));
    jest.advanceTimersByTime(1_000);
    await expect(run).resolves.toEqual({ kind: 'deadline' });
    await flush();
    expect(late).toEqual([{ kind: 'threw', error: new Error('too late') }]);
  });

  it('reports a synchronous throw and a rejection as threw', async () => {
    const error = new Error('sync');
    await expect(
      new InFlightJob(row()).run(
        () => {
          throw error;
        },
        1_000,
        () => undefined,
      ),
    ).resolves.toEqual({ kind: 'threw', error });
    await expect(
      new InFlightJob(row()).run(
        () => Promise.reject('async'),
        1_000,
        () => undefined,
      ),
    ).resolves.toEqual({ kind: 'threw', error: 'async' });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('arms no timer without a deadline (0), and waits for the handler however long it takes', async () => {
    const job = new InFlightJob(row());
    const { handler, resolve } = controlled();
    let outcome: AttemptOutcome | undefined;
    void job.run(handler, 0, () => undefined).then((o) => (outcome = o));
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(24 * 3_600_000);
    await flush();
    expect(outcome).toBeUndefined();
    resolve();
    await flush();
    expect(outcome).toEqual({ kind: 'returned' });
  });

  it('on release ends the attempt at once, aborts its signal, and reports the handler result as late', async () => {
    const job = new InFlightJob(row());
    const late: AttemptOutcome[] = [];
    const { handler, resolve } = controlled();
    const run = job.run(handler, 1_000, (o) => late.push(o));
    job.release('shutdown timeout: test');
    await expect(run).resolves.toEqual({ kind: 'released' });
    expect(job.settled).toBe(true);
    expect(job.job.signal.aborted).toBe(true);
    expect(job.job.signal.reason).toBe('shutdown timeout: test');
    expect(jest.getTimerCount()).toBe(0);
    resolve();
    await flush();
    expect(late).toEqual([{ kind: 'returned' }]);
  });

  it('asks enter right before calling the handler, in the same synchronous stretch, and calls it only on yes', async () => {
    const calls: string[] = [];
    const handler = () => void calls.push('handler');
    const entered = new InFlightJob(row('1'));
    const run = entered.run(
      handler,
      1_000,
      () => undefined,
      () => (calls.push('enter'), true),
    );
    expect(calls).toEqual(['enter', 'handler']); // before run() returned: no event loop turn between them
    await expect(run).resolves.toEqual({ kind: 'returned' });

    calls.length = 0;
    const refused = new InFlightJob(row('2'));
    const late: AttemptOutcome[] = [];
    await expect(
      refused.run(
        handler,
        1_000,
        (o) => late.push(o),
        () => (calls.push('enter'), false),
      ),
    ).resolves.toEqual({
      kind: 'unstarted',
    });
    expect(calls).toEqual(['enter']);
    expect(jest.getTimerCount()).toBe(0); // its deadline timer is gone too
    expect(late).toEqual([]);
  });

  it('keeps the first abort reason, also for a signal first read after the abort', () => {
    const job = new InFlightJob(row());
    job.markLost('lease lost: test');
    job.cancel('cancelled by producer.cancel()');
    expect(job.lost).toBe(true);
    expect(job.cancelRequested).toBe(true);
    expect(job.job.signal.aborted).toBe(true);
    expect(job.job.signal.reason).toBe('lease lost: test');
  });

  it('takes a buffered job out of the buffer when it is cancelled or lost there', () => {
    const taken: string[] = [];
    const cancelled = new InFlightJob(row('1'));
    const buffer = { leave: (job: InFlightJob) => taken.push(job.key) };
    cancelled.bufferedIn = buffer;
    const lost = new InFlightJob(row('2'));
    lost.bufferedIn = buffer;
    cancelled.cancel('cancelled by producer.cancel()');
    lost.markLost('lease lost: test');
    expect(taken).toEqual(['1:7', '2:7']);
  });

  it('gives the handler the claimed row as a Job, createdAt from the row', () => {
    const job = new InFlightJob({ ...row('42'), created_ms: Date.UTC(2026, 0, 2) });
    expect(job.key).toBe('42:7');
    expect(job.job).toMatchObject({
      id: '42',
      kind: 'unit.kind',
      queue: 'default',
      args: { n: 1 },
      attempt: 1,
      maxAttempts: 3,
      runLease: '7',
    });
    expect(job.job.createdAt.toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(job.job.signal.aborted).toBe(false);
  });
});

describe("an attempt's local deadline, on the real clock", () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('is timed from the handler start on the monotonic clock, whatever the wall clock does', async () => {
    const job = new InFlightJob(row());
    // The wall clock jumps an hour ahead between the claim and the start (NTP step, VM resume).
    const later = Date.now() + 3_600_000;
    jest.spyOn(Date, 'now').mockReturnValue(later);
    const outcome = await job.run(
      () => new Promise((resolve) => setTimeout(resolve, 20)),
      10_000,
      () => undefined,
    );
    expect(outcome).toEqual({ kind: 'returned' });
  });
});
