// The jobs page: the filtered list (the filter is the page's URL), keyset pages, selection and bulk actions.
import type { BulkAnswer, JobCount, JobPage } from './api.types.js';
import {
  api,
  base,
  button,
  canAct,
  confirmBox,
  h,
  messageOf,
  notice,
  num,
  stateBadge,
  table,
  td,
  when,
} from './dom.js';
import { act, refresh, type Page } from './live.js';

const cursors: string[] = [''];
let pageIndex = 0;
const selected = new Set<string>();
let allMatching = false;
let lastIds: string[] = [];

const toTop = () => window.scrollTo(0, 0);
const filterQuery = () => new URLSearchParams(location.search);
const capitalized = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
const checked = (e: Event) => (e.target as HTMLInputElement).checked;

/** The filter of the page's URL as a bulk request's filter. */
function filterBody(): Record<string, string | string[]> {
  const q = filterQuery();
  const f: Record<string, string | string[]> = {};
  for (const k of ['state', 'queue', 'kind', 'tag', 'args', 'search']) {
    const v = q.getAll(k).filter((x) => x !== '');
    if (v.length) f[k] = k === 'state' ? v : v.join(',');
  }
  return f;
}

async function bulk(action: string): Promise<void> {
  try {
    const count = allMatching
      ? await api<JobCount>('/jobs/count?' + filterQuery().toString()).then(
          (c) => c.count + (c.capped || c.bounded ? '+' : ''),
        )
      : String(selected.size);
    const what = allMatching ? count + ' job(s) matching the filter' : count + ' selected job(s)';
    if (!(await confirmBox(capitalized(action) + ' ' + what + '?'))) return;
    const filter = filterBody();
    const payload = allMatching
      ? { action, filter, all: Object.keys(filter).length === 0 }
      : { action, ids: Array.from(selected) };
    selected.clear();
    allMatching = false;
    await act(
      api<BulkAnswer>('/jobs/bulk', { method: 'POST', body: payload }),
      (r) =>
        action +
        ': ' +
        (r.count !== undefined ? r.count : r.deleted + ' deleted, ' + r.cancelled + ' cancelled') +
        ' job(s)',
    );
  } catch (e) {
    notice(messageOf(e), true);
  }
}

function toolbar(): HTMLElement {
  const all = h('input', {
    type: 'checkbox',
    id: 'all-matching',
    checked: allMatching,
    onchange: (e) => {
      allMatching = checked(e);
      void refresh(true);
    },
  });
  const actions = ['retry', 'cancel', 'delete'].map((a) => {
    const b = button(capitalized(a) + ' selected', () => void bulk(a), a === 'delete' ? 'danger' : null);
    b.disabled = !allMatching && selected.size === 0;
    b.dataset['bulk'] = a;
    return b;
  });
  return h('div', { cls: 'toolbar' }, [
    h('label', {}, [all, ' all matching the filter']),
    h('span', { cls: 'muted', id: 'selection', text: allMatching ? 'all matching' : selected.size + ' selected' }),
    ...actions,
  ]);
}

function pager(next: string | null): HTMLElement {
  const newer = button('← Newer', () => {
    pageIndex = Math.max(0, pageIndex - 1);
    void refresh(true).then(toTop);
  });
  const older = button('Older →', () => {
    if (next) {
      cursors[pageIndex + 1] = next;
      pageIndex++;
      void refresh(true).then(toTop);
    }
  });
  newer.disabled = pageIndex === 0;
  older.disabled = !next;
  return h('div', { cls: 'toolbar' }, [newer, h('span', { cls: 'muted', text: 'page ' + (pageIndex + 1) }), older]);
}

export const jobsPage: Page<JobPage> = {
  load() {
    const q = filterQuery();
    q.set('limit', '50');
    const after = cursors[pageIndex];
    if (after) q.set('after', after);
    return api<JobPage>('/jobs?' + q.toString());
  },
  render(d) {
    lastIds = d.jobs.map((j) => j.id);
    const pageBox = h('input', {
      type: 'checkbox',
      'aria-label': 'select this page',
      checked: lastIds.length > 0 && lastIds.every((id) => selected.has(id)),
      onchange: (e) => {
        for (const id of lastIds) {
          if (checked(e)) selected.add(id);
          else selected.delete(id);
        }
        void refresh(true);
      },
    });
    const rows = d.jobs.map((j) =>
      h('tr', { 'data-job-id': j.id }, [
        canAct
          ? td(
              h('input', {
                type: 'checkbox',
                'aria-label': 'select job ' + j.id,
                checked: selected.has(j.id) || allMatching,
                disabled: allMatching,
                onchange: (e) => {
                  if (checked(e)) selected.add(j.id);
                  else selected.delete(j.id);
                  void refresh(true);
                },
              }),
            )
          : null,
        td(h('a', { href: base + '/jobs/' + j.id, text: '#' + j.id })),
        td(stateBadge(j.state)),
        td(j.queue),
        td(j.kind),
        h('td', { cls: 'args', title: JSON.stringify(j.args), text: JSON.stringify(j.args) }),
        td(j.tags.join(', ')),
        num(j.attempt + ' / ' + j.maxAttempts),
        td(when(j.createdAt)),
      ]),
    );
    const t = table(
      [
        ...(canAct ? [''] : []),
        'Id',
        'State',
        'Queue',
        'Kind',
        'Args',
        'Tags',
        { label: 'Attempt', num: true },
        'Created',
      ],
      rows.length ? rows : [h('tr', {}, [h('td', { colspan: 9, cls: 'muted', text: 'No job matches.' })])],
    );
    if (canAct) t.querySelector('thead th')?.replaceChildren(pageBox);
    // The server looks at a bounded number of jobs per page: say so when it stopped there.
    const bound = d.bounded
      ? h('p', {
          cls: 'muted',
          id: 'scan-bound',
          text: 'Searched the ' + d.window + ' jobs down to #' + d.next + ' only; "Older →" searches the ones before.',
        })
      : null;
    return h('div', {}, [canAct ? toolbar() : null, t, bound, pager(d.next)]);
  },
};
