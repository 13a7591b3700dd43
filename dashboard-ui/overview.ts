// The overview page: queues, counts by state, throughput chart, pause and resume; durable-event groups.
import type { EventGroupSummary, JobState, Minute, QueueSummary } from './api.types.js';
import { chart } from './chart.js';
import { ago, api, base, button, canAct, h, num, rate, table, td, type Heading } from './dom.js';
import { act, type Page } from './live.js';

const STATES: JobState[] = [
  'scheduled',
  'available',
  'running',
  'retryable',
  'completed',
  'failed',
  'cancelled',
  'waiting',
];

// A count the server estimated (finished states of a big table) is shown with ≈.
function about(q: QueueSummary, s: JobState): string {
  return (q.estimated.includes(s) ? '≈ ' : '') + q.counts[s];
}

const sum = (minutes: Minute[], key: 'completed' | 'failed') => minutes.reduce((a, m) => a + m[key], 0);

function queueRow(q: QueueSummary): HTMLElement {
  const link = h('a', { href: base + '/jobs?queue=' + encodeURIComponent(q.name), text: q.name });
  const pause = () => {
    const verb = q.paused ? 'resume' : 'pause';
    void act(
      api('/queues/' + encodeURIComponent(q.name) + '/' + verb, { method: 'POST', body: {} }),
      'Queue ' + q.name + (q.paused ? ' resumed' : ' paused'),
    );
  };
  return h('tr', { 'data-queue': q.name }, [
    td(link),
    td(q.paused ? h('span', { cls: 'badge paused', text: 'paused' }) : h('span', { cls: 'muted', text: 'active' })),
    ...STATES.map((s) => num(about(q, s))),
    num(ago(q.oldestAvailableAgeMs)),
    num(rate(q.completedPerSecond)),
    num(rate(q.failedPerSecond)),
    td(canAct ? button(q.paused ? 'Resume' : 'Pause', pause) : null),
  ]);
}

/** Each durable-event group's position: who delivers it, how far behind it is, and its failures. */
function eventGroups(groups: EventGroupSummary[]): HTMLElement {
  const rows = groups.map((g) =>
    h('tr', { 'data-group': g.group, 'data-module': g.module }, [
      td(g.module === undefined ? g.group : `${g.group} (${g.module})`),
      td(g.holder ? h('code', { text: g.holder }) : h('span', { cls: 'muted', text: 'none' })),
      num(g.lagEvents),
      num(g.lagEvents ? ago(g.lagMs) : '–'),
      num(g.failures),
      h('td', { cls: 'args', title: g.lastError ?? '', text: g.lastError ?? '–' }),
    ]),
  );
  return h('div', { cls: 'panel', id: 'event-groups' }, [
    h('h2', { text: 'Durable event groups' }),
    table(
      [
        'Group',
        'Delivered by',
        { label: 'Lag (events)', num: true },
        { label: 'Oldest unacknowledged', num: true },
        { label: 'Failures', num: true },
        'Last error',
      ],
      rows,
    ),
  ]);
}

interface Overview {
  queues: QueueSummary[];
  minutes: Minute[];
  groups: EventGroupSummary[];
}

export const overviewPage: Page<Overview> = {
  async load() {
    const [queues, throughput, groups] = await Promise.all([
      api<QueueSummary[]>('/queues'),
      api<{ minutes: Minute[] }>('/throughput'),
      api<EventGroupSummary[]>('/event-groups'),
    ]);
    return { queues, minutes: throughput.minutes, groups };
  },
  render(d) {
    const totals = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const estimated = new Set<JobState>();
    for (const q of d.queues)
      for (const s of STATES) {
        totals[s] += q.counts[s];
        if (q.estimated.includes(s)) estimated.add(s);
      }
    const cards: Array<[string, string | number]> = [
      ['Queues', d.queues.length],
      ['Available', totals.available],
      ['Running', totals.running],
      ['Failed', (estimated.has('failed') ? '≈ ' : '') + totals.failed],
      ['Completed / s (1 h)', rate(sum(d.minutes, 'completed') / 3600)],
      ['Failed / s (1 h)', rate(sum(d.minutes, 'failed') / 3600)],
    ];
    const rows = d.queues.map(queueRow);
    const headings: Heading[] = [
      { label: 'Queue' },
      { label: 'Status' },
      ...STATES.map((s) => ({ label: s, num: true })),
      { label: 'Oldest waiting', num: true },
      { label: 'Done / s', num: true },
      { label: 'Failed / s', num: true },
      '',
    ];
    return h('div', {}, [
      h(
        'div',
        { cls: 'cards' },
        cards.map((c) =>
          h('div', { cls: 'card' }, [h('div', { cls: 'muted', text: c[0] }), h('div', { cls: 'value', text: c[1] })]),
        ),
      ),
      h('div', { cls: 'panel chart' }, [
        h('h2', { text: 'Completed and failed per minute, last hour' }),
        chart(d.minutes),
        h('div', { cls: 'legend' }, [
          h('span', {}, [h('i', { cls: 'completed-key' }), 'completed']),
          h('span', {}, [h('i', { cls: 'failed-key' }), 'failed']),
        ]),
      ]),
      h('h2', { text: 'Queues' }),
      table(
        headings,
        rows.length ? rows : [h('tr', {}, [h('td', { colspan: 14, cls: 'muted', text: 'No queues yet.' })])],
      ),
      d.groups.length ? eventGroups(d.groups) : null,
    ]);
  },
};
