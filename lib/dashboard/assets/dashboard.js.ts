import { DASHBOARD_CORE_JS } from './dashboard-core.js.js';
import { DASHBOARD_JOBS_JS } from './dashboard-jobs.js.js';
import { DASHBOARD_OVERVIEW_JS } from './dashboard-overview.js.js';
import { DASHBOARD_PAGES_JS } from './dashboard-pages.js.js';

/**
 * The dashboard's one script: plain JavaScript (no bundler, no framework), kept in TypeScript string
 * constants so that the ESM and CommonJS builds both carry it and the published package serves it as is.
 */
export const DASHBOARD_JS = [DASHBOARD_CORE_JS, DASHBOARD_OVERVIEW_JS, DASHBOARD_JOBS_JS, DASHBOARD_PAGES_JS].join('');
