/** The jobs page: the filtered list, keyset pages, selection and bulk actions. (browser JavaScript, served as is). */
export const DASHBOARD_JOBS_JS = `
  var cursors = [''],
    pageIndex = 0,
    selected = new Set(),
    allMatching = false,
    lastIds = [];
  function toTop() {
    window.scrollTo(0, 0);
  }
  function filterQuery() {
    return new URLSearchParams(location.search);
  }
  function filterBody() {
    var q = filterQuery(),
      f = {};
    ['state', 'queue', 'kind', 'tag', 'args', 'search'].forEach(function (k) {
      var v = q.getAll(k).filter(function (x) {
        return x !== '';
      });
      if (v.length) f[k] = k === 'state' ? v : v.join(',');
    });
    return f;
  }
  function bulk(action) {
    var counted = allMatching
      ? api('/jobs/count?' + filterQuery().toString()).then(function (c) {
          return c.count + (c.capped || c.bounded ? '+' : '');
        })
      : Promise.resolve(String(selected.size));
    counted
      .then(function (count) {
        var what = allMatching ? count + ' job(s) matching the filter' : count + ' selected job(s)';
        return confirmBox(action.charAt(0).toUpperCase() + action.slice(1) + ' ' + what + '?').then(function (yes) {
          if (!yes) return;
          var filter = filterBody();
          var payload = allMatching
            ? { action: action, filter: filter, all: Object.keys(filter).length === 0 }
            : { action: action, ids: Array.from(selected) };
          selected.clear();
          allMatching = false;
          return act(api('/jobs/bulk', { method: 'POST', body: payload }), function (r) {
            return (
              action +
              ': ' +
              (r.count !== undefined ? r.count : r.deleted + ' deleted, ' + r.cancelled + ' cancelled') +
              ' job(s)'
            );
          });
        });
      })
      .catch(function (e) {
        notice(e.message, true);
      });
  }

  pages.jobs = {
    load: function () {
      var q = filterQuery();
      q.set('limit', '50');
      if (cursors[pageIndex]) q.set('after', cursors[pageIndex]);
      return api('/jobs?' + q.toString());
    },
    render: function (d) {
      lastIds = d.jobs.map(function (j) {
        return j.id;
      });
      var pageBox = h('input', {
        type: 'checkbox',
        'aria-label': 'select this page',
        checked:
          lastIds.length > 0 &&
          lastIds.every(function (id) {
            return selected.has(id);
          }),
        onchange: function (e) {
          lastIds.forEach(function (id) {
            if (e.target.checked) selected.add(id);
            else selected.delete(id);
          });
          refresh(true);
        },
      });
      var rows = d.jobs.map(function (j) {
        return h('tr', { 'data-job-id': j.id }, [
          canAct
            ? td(
                h('input', {
                  type: 'checkbox',
                  'aria-label': 'select job ' + j.id,
                  checked: selected.has(j.id) || allMatching,
                  disabled: allMatching,
                  onchange: function (e) {
                    if (e.target.checked) selected.add(j.id);
                    else selected.delete(j.id);
                    refresh(true);
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
        ]);
      });
      var tools = canAct
        ? h(
            'div',
            { cls: 'toolbar' },
            [
              h('label', {}, [
                h('input', {
                  type: 'checkbox',
                  id: 'all-matching',
                  checked: allMatching,
                  onchange: function (e) {
                    allMatching = e.target.checked;
                    refresh(true);
                  },
                }),
                ' all matching the filter',
              ]),
              h('span', {
                cls: 'muted',
                id: 'selection',
                text: allMatching ? 'all matching' : selected.size + ' selected',
              }),
              ['retry', 'cancel', 'delete'].map(function (a) {
                var b = button(
                  a.charAt(0).toUpperCase() + a.slice(1) + ' selected',
                  function () {
                    bulk(a);
                  },
                  a === 'delete' ? 'danger' : null,
                );
                b.disabled = !allMatching && selected.size === 0;
                b.dataset.bulk = a;
                return b;
              }),
            ].flat(),
          )
        : null;
      var pager = h('div', { cls: 'toolbar' }, [
        button('← Newer', function () {
          pageIndex = Math.max(0, pageIndex - 1);
          refresh(true).then(toTop);
        }),
        h('span', { cls: 'muted', text: 'page ' + (pageIndex + 1) }),
        button('Older →', function () {
          if (d.next) {
            cursors[pageIndex + 1] = d.next;
            pageIndex++;
            refresh(true).then(toTop);
          }
        }),
      ]);
      pager.children[0].disabled = pageIndex === 0;
      pager.children[2].disabled = !d.next;
      var head = (canAct ? [''] : []).concat([
        'Id',
        'State',
        'Queue',
        'Kind',
        'Args',
        'Tags',
        { label: 'Attempt', num: true },
        'Created',
      ]);
      var t = table(
        head,
        rows.length ? rows : [h('tr', {}, [h('td', { colspan: 9, cls: 'muted', text: 'No job matches.' })])],
      );
      if (canAct) t.querySelector('thead th').replaceChildren(pageBox);
      // The server looks at a bounded number of jobs per page: say so when it stopped there.
      var bound = d.bounded
        ? h('p', {
            cls: 'muted',
            id: 'scan-bound',
            text:
              'Searched the ' + d.window + ' jobs down to #' + d.next + ' only; "Older →" searches the ones before.',
          })
        : null;
      return h('div', {}, [tools, t, bound, pager]);
    },
  };
`;
