// The job page: every field, args, output and progress as JSON, the attempts and their errors, the
// current lease; retry, cancel and delete.
import type { JobDetail, JobRecord, Outcome } from './api.types.js';
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
      ['Workflow', j.workflowId || '–'],
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
      h('div', { cls: 'panel', id: 'attempts' }, [
        h('h2', { text: 'Attempts and errors' }),
        attempts.length ? h('ol', { cls: 'timeline' }, attempts) : h('p', { cls: 'muted', text: 'No error so far.' }),
      ]),
    ]);
  },
};
