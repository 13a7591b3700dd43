/**
 * Texts of the dashboard (AwaDashboardModule): boot warnings and the errors its HTTP API answers with. The
 * dashboard keeps its own, out of the core's.
 */
export const AwaDashboardMessages = {
  openWarning: (path: string) =>
    `AwaDashboardModule: the dashboard at ${path} has NO guard: anyone who can reach this app can see every ` +
    'job and its args, and retry, cancel or delete jobs. Set the option `guard` (an ordinary Nest guard class), ' +
    'or `readOnly: true` at least, before this app is reachable from outside.',
  readOnly: () => 'the dashboard is read-only (option readOnly): actions are refused',
  notJson: () => 'actions need a JSON body (content-type: application/json)',
  crossSite: (header: string) =>
    `actions are refused from another site or origin (${header}): use the dashboard's own pages`,
  badParam: (name: string, problem: string) => `invalid \`${name}\`: ${problem}`,
  /** QueueAdmin's refusal of a filter field, as the problem of a dashboard parameter. */
  filterProblem: (adminMessage: string) => adminMessage.replace(/^nestjs-awa: /, ''),
  jobNotFound: (id: string) => `job ${id} not found`,
  workflowNotFound: (id: string) => `workflow ${id} not found`,
  internalError: () => 'the dashboard failed to answer; see the server log',
  actionFailed: (what: string, error: string) => `dashboard ${what} failed: ${error}`,
} as const;
