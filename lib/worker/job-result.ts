import { JobValueMessages } from '../awa.messages.js';
import { encodeJson } from '../util/json-value.js';
import type { InFlightJob } from './in-flight-job.js';
import { JobSnooze } from './job-snooze.js';

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
