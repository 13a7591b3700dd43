import { afterEach, jest } from '@jest/globals';
import { InFlightJob, type ClaimedJobRow } from '../../lib/worker/in-flight-job.js';

const ROW: ClaimedJobRow = {
  id: '1', kind: 'k', queue: 'default', args: {}, attempt: 1, max_attempts: 3, priority: 0, run_lease: '1', created_ms: 0,
};

/** The local deadline of one attempt. No database: this is the process's own timer. */
describe('an attempt\'s local deadline', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('is timed from the handler start on the monotonic clock, whatever the wall clock does', async () => {
    const job = new InFlightJob(ROW);
    // The wall clock jumps an hour ahead between the claim and the start (NTP step, VM resume).
    const later = Date.now() + 3_600_000;
    jest.spyOn(Date, 'now').mockReturnValue(later);
    const outcome = await job.run(() => new Promise((resolve) => setTimeout(resolve, 20)), 10_000, () => undefined);
    expect(outcome).toEqual({ kind: 'returned' });
  });

  it('still ends a handler that outlives it', async () => {
    const job = new InFlightJob(ROW);
    const late: string[] = [];
    const outcome = await job.run(() => new Promise(() => undefined), 50, (o) => late.push(o.kind));
    expect(outcome).toEqual({ kind: 'deadline' });
    expect(late).toEqual([]);
  });
});
