import { plainClaimedRow, type ClaimedJobRow } from '../sql/claim.sql.js';

/**
 * The handoff notification's payload (handoffSql.insertHandedOff): the instance it is for, the
 * queue, and the job's columns in the order of claimJobs' rows (a handed job has no workflow).
 */
interface HandoffPayload {
  i: string;
  q: string;
  r: unknown[];
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
  const row = plainClaimedRow(parsed.r) as ClaimedJobRow;
  row.queue = parsed.q;
  return row;
}
