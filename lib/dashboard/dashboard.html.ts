import { JOB_STATES } from '../interfaces/job.interface.js';

export type DashboardPage = 'overview' | 'jobs' | 'job' | 'workflow' | 'schedules' | 'instances';

export interface PageContext {
  /** The URL prefix the dashboard is served under, as the browser sees it. */
  base: string;
  page: DashboardPage;
  jobId: string | undefined;
  workflowId?: string | undefined;
  query: URLSearchParams;
  readOnly: boolean;
  refreshInterval: number;
}

const TITLES: Record<DashboardPage, string> = {
  overview: 'Overview',
  jobs: 'Jobs',
  job: 'Job',
  workflow: 'Workflow',
  schedules: 'Schedules',
  instances: 'Instances',
};

const NAV: { page: DashboardPage; href: string }[] = [
  { page: 'overview', href: '' },
  { page: 'jobs', href: '/jobs' },
  { page: 'schedules', href: '/schedules' },
  { page: 'instances', href: '/instances' },
];

/** Text made safe for HTML content and double-quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function nav(ctx: PageContext): string {
  return NAV.map(({ page, href }) => {
    const current = page === ctx.page || (page === 'jobs' && (ctx.page === 'job' || ctx.page === 'workflow'));
    return `<a href="${escapeHtml(ctx.base + href)}"${current ? ' aria-current="page"' : ''}>${TITLES[page]}</a>`;
  }).join('');
}

function field(label: string, name: string, ctx: PageContext, placeholder: string): string {
  const value = escapeHtml(ctx.query.get(name) ?? '');
  return `<label>${label}<input name="${name}" value="${value}" placeholder="${escapeHtml(placeholder)}"></label>`;
}

/** The filter form of the jobs page: a plain GET form, so every filtered list has its own URL. */
function jobsFilter(ctx: PageContext): string {
  const selected = new Set(ctx.query.getAll('state').flatMap((s) => s.split(',')));
  const states = JOB_STATES.map(
    (s) =>
      `<label class="chip"><input type="checkbox" name="state" value="${s}"${selected.has(s) ? ' checked' : ''}>` +
      `${s}</label>`,
  ).join('');
  return `<form class="filters" id="filters" method="get" action="${escapeHtml(ctx.base)}/jobs">
  <fieldset class="states"><legend>State</legend>${states}</fieldset>
  <div class="fields">
    ${field('Queue', 'queue', ctx, 'emails, reports')}
    ${field('Kind', 'kind', ctx, 'email.send')}
    ${field('Tags (all of)', 'tag', ctx, 'vip, eu')}
    ${field('Args contain (JSON)', 'args', ctx, '{"userId": 42}')}
    ${field('Search text', 'search', ctx, 'ada@example.com')}
  </div>
  <div class="form-actions"><button type="submit" class="primary">Filter</button>
  <a class="button" href="${escapeHtml(ctx.base)}/jobs">Clear</a></div>
</form>`;
}

/**
 * A page of the dashboard: the layout, rendered here; its data is filled in by the script from the JSON API.
 * Its icon is empty: else the browser asks the app's root for /favicon.ico, outside the dashboard (a 404).
 */
export function renderPage(ctx: PageContext): string {
  const title =
    ctx.page === 'job'
      ? `Job ${ctx.jobId ?? ''}`
      : ctx.page === 'workflow'
        ? `Workflow ${ctx.workflowId ?? ''}`
        : TITLES[ctx.page];
  const data = {
    base: ctx.base,
    page: ctx.page,
    'job-id': ctx.jobId ?? '',
    'workflow-id': ctx.workflowId ?? '',
    'read-only': String(ctx.readOnly),
    actions: String(!ctx.readOnly),
    refresh: String(ctx.refreshInterval),
  };
  const attrs = Object.entries(data)
    .map(([k, v]) => `data-${k}="${escapeHtml(v)}"`)
    .join(' ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · awa</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(ctx.base)}/assets/dashboard.css">
<script src="${escapeHtml(ctx.base)}/assets/dashboard.js" defer></script>
</head>
<body ${attrs}>
<header class="top">
  <a class="brand" href="${escapeHtml(ctx.base || '/')}">awa</a>
  <nav>${nav(ctx)}</nav>
  <div class="live">
    ${ctx.readOnly ? '<span class="badge">read-only</span>' : ''}
    <span id="live-status" class="muted">live</span>
    <button type="button" id="live-toggle" aria-pressed="false">Pause refresh</button>
  </div>
</header>
<main>
  <h1>${escapeHtml(title)}</h1>
  ${ctx.page === 'jobs' ? jobsFilter(ctx) : ''}
  <div id="notice" role="status" hidden></div>
  <div id="content"><p class="muted">Loading…</p></div>
</main>
<div id="confirm" class="overlay" hidden>
  <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="confirm-text">
    <p id="confirm-text"></p>
    <div class="form-actions"><button type="button" id="confirm-ok" class="danger">Confirm</button>
    <button type="button" id="confirm-cancel">Cancel</button></div>
  </div>
</div>
</body>
</html>
`;
}
