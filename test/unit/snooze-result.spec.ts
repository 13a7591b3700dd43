import { JobSnoozedError } from '../../lib/errors/job-snoozed.error.js';
import { encodeOutput, snoozeOf } from '../../lib/worker/job-result.js';
import { InFlightJob, type ClaimedJobRow } from '../../lib/worker/in-flight-job.js';
import { JobSnooze } from '../../lib/interfaces/job-snooze.js';

const row: ClaimedJobRow = {
  id: '1',
  kind: 'unit.kind',
  queue: 'default',
  args: {},
  attempt: 1,
  max_attempts: 3,
  priority: 0,
  run_lease: '1',
  created_ms: 0,
  run_at_ms: 0,
  workflow_id: null,
  traceparent: null,
};

/** What an attempt's handler returned, as the LeaseWriter reads it: output, or a snooze. */
describe('attempt result', () => {
  it('keeps the returned value, and returns a snooze marker from job.snooze(ms)', async () => {
    const job = new InFlightJob(row);
    expect(
      await job.run(
        () => ({ n: 1 }),
        0,
        () => undefined,
      ),
    ).toEqual({ kind: 'returned' });
    expect(job.returned).toEqual({ n: 1 });
    expect(snoozeOf(job)).toBeUndefined();
    const snoozing = new InFlightJob(row);
    await snoozing.run(
      (j) => j.snooze(500),
      0,
      () => undefined,
    );
    expect(snoozeOf(snoozing)).toEqual(new JobSnooze(500));
  });

  it.each([
    [
      'thrown synchronously',
      () => {
        throw new JobSnoozedError(750);
      },
    ],
    ['rejected', () => Promise.reject(new JobSnoozedError(750))],
  ])('turns a JobSnoozedError %s into a snooze, not a failure', async (_how, handler) => {
    const job = new InFlightJob(row);
    expect(await job.run(handler, 0, () => undefined)).toEqual({ kind: 'returned' });
    expect(snoozeOf(job)?.delayMs).toBe(750);
  });

  it('encodes output under the cap, and a note instead over it', () => {
    const job = new InFlightJob(row);
    job.returned = { text: 'é' };
    encodeOutput(job, 100);
    expect([job.outputJson, job.outputNote]).toEqual(['{"text":"é"}', undefined]);
    const big = new InFlightJob(row);
    big.returned = { text: 'é' };
    encodeOutput(big, 12); // 13 bytes: é is two
    expect(big.outputJson).toBeUndefined();
    expect(big.outputNote).toContain('13 bytes');
  });
});
