import { InFlightJob, type ClaimedJobRow } from '../../lib/worker/in-flight-job.js';
import { held, heldBut } from '../../lib/worker/job-result.js';

const attempt = (id: string, runLease: string) =>
  new InFlightJob({
    id,
    kind: 'unit.kind',
    queue: 'default',
    args: null,
    attempt: 1,
    max_attempts: 3,
    priority: 0,
    run_lease: runLease,
    created_ms: 0,
    run_at_ms: 0,
    workflow_id: null,
    traceparent: null,
  } satisfies ClaimedJobRow);

/** Which attempts of a batch a fenced write changed, from the rows it returned. */
describe('the attempts a fenced write changed', () => {
  // Job 2 twice: a rescued attempt (lease 1) still running here beside its job's next one (lease 5).
  const batch = [attempt('1', '7'), attempt('2', '1'), attempt('2', '5'), attempt('3', '9')];

  it('held: from the rows it changed, matched by id and, for a job there twice, by lease', () => {
    expect(
      held(batch, [
        { id: '1', run_lease: '7' },
        { id: '3', run_lease: '9' },
      ]),
    ).toEqual([true, false, false, true]);
    expect(held(batch, [{ id: '2', run_lease: '5' }])).toEqual([false, false, true, false]);
  });

  it('heldBut: from the rows it missed (completeJobs), every attempt when none', () => {
    expect(heldBut(batch, [])).toEqual([true, true, true, true]);
    expect(heldBut(batch, [{ id: '2', run_lease: '1' }])).toEqual([true, false, true, true]);
    expect(
      heldBut(batch, [
        { id: '1', run_lease: '7' },
        { id: '2', run_lease: '5' },
      ]),
    ).toEqual([false, true, false, true]);
  });
});
