import { JobValueMessages } from '../awa.messages.js';
import { encodeJson } from '../util/json-value.js';
import { leaseKey, type InFlightJob } from './in-flight-job.js';
import { JobSnooze } from '../interfaces/job-snooze.js';

/** The snooze the attempt's handler asked for (returned, or thrown as JobSnoozedError), if any. */
export function snoozeOf(job: InFlightJob): JobSnooze | undefined {
  return job.returned instanceof JobSnooze ? job.returned : undefined;
}

/**
 * Sets `job.outputJson` from what the handler returned, or, for a value that is not JSON or is over
 * `maxBytes`, leaves it null and sets `job.outputNote`, the entry its completion appends to `errors`.
 */
export function encodeOutput(job: InFlightJob, maxBytes: number): void {
  const encoded = encodeJson(job.returned);
  if ('problem' in encoded) job.outputNote = JobValueMessages.outputInvalid(encoded.problem);
  else if (encoded.bytes > maxBytes) job.outputNote = JobValueMessages.outputTooLarge(encoded.bytes, maxBytes);
  else job.outputJson = encoded.json;
}

/** Which of `jobs` the fenced write changed (the rest had lost their lease). */
export function held(jobs: InFlightJob[], rows: Array<{ id: string; run_lease: string }>): boolean[] {
  // By id, with no key string per job; a batch with two attempts of one job (one rescued, still
  // running here) falls back to the (id, run_lease) keys.
  const leases = new Map<string, string>();
  for (const r of rows) {
    if (leases.has(r.id)) {
      const done = new Set(rows.map((row) => leaseKey(row.id, row.run_lease)));
      return jobs.map((j) => done.has(j.key));
    }
    leases.set(r.id, r.run_lease);
  }
  return jobs.map((j) => leases.get(j.id) === j.runLease);
}

/** Which of `jobs` a fenced write that returns the attempts it missed (completeJobs) changed. */
export function heldBut(jobs: InFlightJob[], missed: Array<{ id: string; run_lease: string }>): boolean[] {
  if (missed.length === 0) return jobs.map(() => true);
  const lost = new Set(missed.map((row) => leaseKey(row.id, row.run_lease)));
  return jobs.map((j) => !lost.has(j.key));
}

/** A data exception (SQLSTATE class 22) or a program limit (54, e.g. stack depth): the data was refused. */
export function refusedData(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}
