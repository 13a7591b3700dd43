import type { ClaimedJobRow } from '../sql/worker.sql.js';

/** The handoff notification's payload (handoffSql.insertHandedOff): instance, queue, the row's columns. */
interface HandoffPayload {
  i: string;
  q: string;
  r: [
    id: string,
    kind: string,
    args: unknown,
    attempt: number,
    maxAttempts: number,
    priority: number,
    runLease: string,
    createdMs: number,
    runAtMs: number,
    traceparent: string | null,
  ];
}

/**
 * @internal The job a handoff notification hands to instance `instanceId`, as a claimed row; undefined
 * when it is another instance's (every worker instance hears them all) or not a handoff payload.
 */
export function handedOffJob(payload: string, instanceId: string): ClaimedJobRow | undefined {
  let parsed: HandoffPayload;
  try {
    parsed = JSON.parse(payload) as HandoffPayload;
  } catch {
    return undefined;
  }
  if (parsed?.i !== instanceId || !Array.isArray(parsed.r)) return undefined;
  const [id, kind, args, attempt, maxAttempts, priority, runLease, createdMs, runAtMs, traceparent] = parsed.r;
  return {
    id,
    kind,
    queue: parsed.q,
    args,
    attempt,
    max_attempts: maxAttempts,
    priority,
    run_lease: runLease,
    created_ms: createdMs,
    run_at_ms: runAtMs,
    traceparent,
    workflow_id: null,
  };
}
