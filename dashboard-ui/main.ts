// The dashboard's script: the page the server rendered (<body data-page>) is filled in from the JSON
// API and kept live. Bundled by build.mjs into one file, served at {path}/assets/dashboard.js.
import { body } from './dom.js';
import { jobPage } from './job.js';
import { jobsPage } from './jobs.js';
import { start, type Page } from './live.js';
import { overviewPage } from './overview.js';
import { instancesPage, schedulesPage } from './schedules.js';
import { workflowPage } from './workflow.js';

const pages: Record<string, Page<any>> = {
  overview: overviewPage,
  jobs: jobsPage,
  job: jobPage,
  workflow: workflowPage,
  schedules: schedulesPage,
  instances: instancesPage,
};

start(pages[body.dataset['page'] ?? ''] ?? null);
