/** The PostgreSQL error codes (SQLSTATE) the queue acts on, by their names in PostgreSQL's appendix A. */
export const SqlState = {
  uniqueViolation: '23505',
  deadlockDetected: '40P01',
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
} as const;

/** The SQLSTATE of an error from the driver, if it carries one. */
export function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
