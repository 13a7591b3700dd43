// nestjs-awa/dashboard: the web dashboard. The core never imports lib/dashboard/; the dashboard reads
// through the core's public services (QueueAdmin, JobSchedules) and its own SQL (dashboard.sql.ts).
export { AwaDashboardModule } from './dashboard.module.js';
export type { AwaDashboardOptions } from './dashboard.options.js';
