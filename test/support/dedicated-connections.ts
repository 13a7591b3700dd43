import { queryOnce } from './test-database.js';
import { waitFor } from './test-app.js';

/** A backend of one of the instance's dedicated connections, as pg_stat_activity shows it. */
export interface DedicatedBackend {
  pid: number;
  query: string;
}

/** The backends of the test database with this application_name (awa-claims, awa-leases). */
export const dedicatedBackends = (url: string, applicationName: string) =>
  queryOnce<DedicatedBackend>(
    url,
    `SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
    [applicationName],
  );

/**
 * Terminates the one backend named `applicationName`, and waits until the work (`runSome`, run
 * meanwhile: it goes through the pool until the connection is back) has a new one, which then runs
 * a statement whose text contains `marker`.
 */
export async function expectReopenedAfterLoss(
  url: string,
  applicationName: string,
  marker: string,
  runSome: (n: number) => Promise<unknown>,
): Promise<void> {
  const backends = () => dedicatedBackends(url, applicationName);
  await waitFor(async () => (await backends()).length === 1, 15_000, `the ${applicationName} connection`);
  const [lost] = await backends();
  await queryOnce(url, 'SELECT pg_terminate_backend($1)', [lost!.pid]);
  const renewed = async () => (await backends()).some((b) => b.pid !== lost!.pid);
  await waitFor(async () => !(await backends()).some((b) => b.pid === lost!.pid), 15_000, `the lost one to end`);
  for (let i = 0; i < 20 && !(await renewed()); i++) await runSome(2);
  await waitFor(renewed, 15_000, `a new ${applicationName} connection`);
  await runSome(5);
  await waitFor(
    async () => (await backends()).some((b) => b.pid !== lost!.pid && b.query.includes(marker)),
    15_000,
    `a statement on the new ${applicationName} connection`,
  );
}
