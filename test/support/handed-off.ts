import { queryOnce } from './test-database.js';

/**
 * Whether a job was handed off: inserted running by the enqueue's statement, so attempted at its
 * creation, to the microsecond (a claim is a later transaction; JavaScript dates would round both
 * to the ms).
 */
export async function handedOff(url: string, jobId: string): Promise<boolean | undefined> {
  const [row] = await queryOnce<{ handed: boolean }>(
    url,
    'SELECT attempted_at = created_at AS handed FROM awa.all_jobs WHERE id = $1',
    [jobId],
  );
  return row?.handed;
}
