// The workflow page: its jobs drawn as a graph (layers by dependency depth, a link to each job), and
// the table of its jobs. Past DRAW_MAX jobs, the table only: a drawing that large would not be read.
import type { WorkflowView } from './api.types.js';
import { api, base, body, h, stateBadge, table, td, when } from './dom.js';
import { drawGraph, labelOf } from './graph.js';
import type { Page } from './live.js';

/** The most jobs the page draws. */
export const DRAW_MAX = 200;

export const workflowPage: Page<WorkflowView> = {
  load() {
    return api<WorkflowView>('/workflows/' + body.dataset['workflowId']);
  },
  render(w) {
    const rows = w.jobList.map((j) =>
      h('tr', { 'data-job-id': j.id }, [
        td(h('a', { href: base + '/jobs/' + j.id, text: '#' + j.id })),
        td(labelOf(j, w.edges)),
        td(j.kind),
        td(j.queue),
        td(stateBadge(j.state)),
        td(j.state === 'waiting' ? String(j.waitingOn) : '–'),
        td(when(j.finalizedAt)),
      ]),
    );
    const drawable = w.jobList.length <= DRAW_MAX;
    return h('div', {}, [
      h('p', {}, [
        stateBadge(w.state),
        ` ${w.jobs} jobs, ${w.edges.length} dependencies; created ${when(w.createdAt)}`,
        w.finishedAt ? `, finished ${when(w.finishedAt)}` : '',
        // getWorkflow returns at most WORKFLOW_READ_MAX (20,000) jobs.
        w.jobList.length < w.jobs ? `; the first ${w.jobList.length} are shown` : '',
      ]),
      h('div', { cls: 'panel graph', id: 'graph' }, [
        h('h2', { text: 'Graph' }),
        drawable
          ? drawGraph(w.jobList, w.edges)
          : h('p', {
              cls: 'muted',
              text: `${w.jobs} jobs: too many to draw (over ${DRAW_MAX}); the table below lists them.`,
            }),
      ]),
      h('div', { cls: 'panel', id: 'workflow-jobs' }, [
        h('h2', { text: 'Jobs' }),
        table(['Id', 'Ref', 'Kind', 'Queue', 'State', 'Waits on', 'Finalized'], rows),
      ]),
    ]);
  },
};
