// The job page: every field, args, output and progress as JSON, the attempts and their errors, the
// current lease, a workflow job's dependencies and dependents; retry, cancel and delete.
import type { JobDetail, JobLink, JobRecord, Outcome } from './api.types.js';
import {
  ago,
  api,
  base,
  body,
  button,
  canAct,
  confirmBox,
  h,
  jsonBlock,
  messageOf,
  notice,
  stateBadge,
  table,
  td,
  when,
} from './dom.js';
import { act, type Page } from './live.js';

type Fact = [string, Node | string | number];

const kv = (list: Fact[]) =>
  h(
    'dl',
    { cls: 'kv' },
    list.flatMap((f) => [h('dt', { text: f[0] }), h('dd', {}, [f[1]])]),
  );

function actions(j: JobRecord): HTMLElement {
  const remove = async () => {
    if (!(await confirmBox('Delete job ' + j.id + '?'))) return;
    try {
      const r = await api<Outcome>('/jobs/' + j.id, { method: 'DELETE' });
      if (r.outcome === 'deleted') location.href = base + '/jobs';
      else notice('delete: ' + r.outcome, true);
    } catch (e) {
      notice(messageOf(e), true);
    }
  };
  return h('div', { cls: 'toolbar' }, [
    button(
      'Retry',
      () =>
        void act(api<Outcome>('/jobs/' + j.id + '/retry', { method: 'POST', body: {} }), (r) => 'retry: ' + r.outcome),
      'primary',
    ),
    button(
      'Cancel',
      () =>
        void act(
          api<Outcome>('/jobs/' + j.id + '/cancel', { method: 'POST', body: {} }),
          (r) => 'cancel: ' + r.outcome,
        ),
    ),
    button('Delete', () => void remove(), 'danger'),
  ]);
}

function timeline(j: JobRecord): HTMLElement[] {
  const items = j.errors.map((e) =>
    h('li', {}, [
      h('strong', { text: 'attempt ' + e.attempt }),
      ' ',
      h('span', { cls: 'muted', text: when(e.at) }),
      h('pre', { text: e.error }),
    ]),
  );
  const last =
    j.state === 'completed' ? 'completed' : j.state === 'running' ? 'attempt ' + j.attempt + ' running since' : null;
  if (last)
    items.push(
      h('li', { cls: 'ok' }, [
        h('strong', { text: last }),
        ' ',
        h('span', { cls: 'muted', text: when(j.state === 'running' ? j.attemptedAt : j.finalizedAt) }),
      ]),
    );
  return items;
}

/** A workflow job's dependencies and dependents, with their states now. */
function links(list: JobLink[]): HTMLElement {
  const side = (which: JobLink['side'], title: string) => {
    const rows = list
      .filter((l) => l.side === which)
      .map((l) =>
        h('tr', { 'data-link': l.id }, [
          td(h('a', { href: base + '/jobs/' + l.id, text: '#' + l.id })),
          td(l.ref),
          td(l.kind ?? '–'),
          td(stateBadge(l.state)),
          td(l.policy),
        ]),
      );
    return h('div', { cls: 'panel', id: which + 's' }, [
      h('h2', { text: title }),
      rows.length ? table(['Id', 'Ref', 'Kind', 'State', 'On failure'], rows) : h('p', { cls: 'muted', text: 'None.' }),
    ]);
  };
  return h('div', { cls: 'grid2' }, [side('dependency', 'Waits for'), side('dependent', 'Waited for by')]);
}

export const jobPage: Page<JobDetail> = {
  load() {
    return api<JobDetail>('/jobs/' + body.dataset['jobId']);
  },
  render(d) {
    const j = d.job,
      lease = d.lease;
    const facts: Fact[] = [
      ['State', stateBadge(j.state)],
      ['Queue', j.queue],
      ['Kind', j.kind],
      ['Attempt', j.attempt + ' of ' + j.maxAttempts],
      ['Priority', j.priority],
      ['Tags', j.tags.join(', ') || '–'],
      ['Unique key', j.uniqueKey || '–'],
      ['Workflow', j.workflowId ? h('a', { href: base + '/workflows/' + j.workflowId, text: j.workflowId }) : '–'],
      ['Snoozes', j.snoozes],
      ['Created', when(j.createdAt)],
      ['Run at', when(j.runAt)],
      ['Attempted', when(j.attemptedAt)],
      ['Finalized', when(j.finalizedAt)],
    ];
    const attempts = timeline(j);
    return h('div', {}, [
      canAct ? actions(j) : null,
      h('div', { cls: 'grid2' }, [
        h('div', { cls: 'panel' }, [h('h2', { text: 'Job' }), kv(facts)]),
        h('div', { cls: 'panel', id: 'lease' }, [
          h('h2', { text: 'Current lease' }),
          lease
            ? kv([
                ['Instance', lease.instance_id],
                ['Heartbeat', ago(lease.heartbeat_age_ms) + ' ago'],
                ['Deadline', when(lease.deadline_at)],
                ['Claimed', when(lease.claimed_at)],
              ])
            : h('p', { cls: 'muted', text: 'No lease: the job is not running.' }),
        ]),
      ]),
      h('div', { cls: 'grid2' }, [
        h('div', { cls: 'panel', id: 'args' }, [h('h2', { text: 'Args' }), jsonBlock(j.args)]),
        h('div', { cls: 'panel', id: 'output' }, [h('h2', { text: 'Output' }), jsonBlock(j.output)]),
        h('div', { cls: 'panel', id: 'progress' }, [h('h2', { text: 'Progress' }), jsonBlock(j.progress)]),
      ]),
      d.links.length ? links(d.links) : null,
      h('div', { cls: 'panel', id: 'attempts' }, [
        h('h2', { text: 'Attempts and errors' }),
        attempts.length ? h('ol', { cls: 'timeline' }, attempts) : h('p', { cls: 'muted', text: 'No error so far.' }),
      ]),
    ]);
  },
};
