// The schedules page (periodic jobs: pause, resume, run now) and the instances page.
import type { Instance, Schedule } from './api.types.js';
import { ago, api, button, canAct, h, num, table, td, when } from './dom.js';
import { act, type Page } from './live.js';

function scheduleRow(s: Schedule): HTMLElement {
  const n = encodeURIComponent(s.name);
  const post = (path: string, done: string) =>
    void act(api('/schedules/' + n + path, { method: 'POST', body: {} }), done);
  return h('tr', { 'data-schedule': s.name }, [
    td(s.name),
    td(s.kind),
    td(s.queue),
    // The cron's time zone beside it: '0 3 * * *' means another hour in each zone.
    td(h('span', {}, [h('code', { text: s.cron }), ' ', h('span', { cls: 'muted', text: s.timeZone || 'UTC' })])),
    td(s.paused ? h('span', { cls: 'badge paused', text: 'paused' }) : 'active'),
    td(when(s.nextFireAt)),
    td(when(s.lastFireAt)),
    td(
      canAct
        ? h('span', { cls: 'toolbar' }, [
            button(s.paused ? 'Resume' : 'Pause', () =>
              post(s.paused ? '/resume' : '/pause', s.name + (s.paused ? ' resumed' : ' paused')),
            ),
            button('Run now', () => post('/run', s.name + ': enqueued')),
          ])
        : null,
    ),
  ]);
}

export const schedulesPage: Page<{ available: boolean; schedules: Schedule[] }> = {
  load() {
    return api('/schedules');
  },
  render(d) {
    if (!d.available) return h('p', { cls: 'muted', text: 'Periodic jobs are not available in this app.' });
    const rows = d.schedules.map(scheduleRow);
    return table(
      ['Name', 'Kind', 'Queue', 'Cron', 'Status', 'Next fire', 'Last fire', ''],
      rows.length ? rows : [h('tr', {}, [h('td', { colspan: 8, cls: 'muted', text: 'No periodic job.' })])],
    );
  },
};

export const instancesPage: Page<Instance[]> = {
  load() {
    return api('/instances');
  },
  render(list) {
    return table(
      [
        'Instance',
        'Host',
        { label: 'Pid', num: true },
        'Queues',
        'Role',
        { label: 'Leases', num: true },
        'Last heartbeat',
        'Started',
      ],
      list.map((i) =>
        h('tr', { 'data-instance': i.id }, [
          td(h('code', { text: i.id })),
          td(i.hostname),
          num(i.pid),
          td(i.queues.join(', ')),
          td(i.leader ? h('span', { cls: 'badge leader', text: 'leader' }) : 'follower'),
          num(i.leases),
          td(ago(i.heartbeat_age_ms) + ' ago'),
          td(when(i.started_at)),
        ]),
      ),
    );
  },
};
