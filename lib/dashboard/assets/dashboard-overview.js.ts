/** The overview page: queues, counts by state, throughput chart, pause and resume (browser JavaScript). */
export const DASHBOARD_OVERVIEW_JS = `
  var STATES = ['scheduled', 'available', 'running', 'retryable', 'completed', 'failed', 'cancelled'];
  function table(headers, rows) {
    return h('div', { cls: 'table-wrap' }, [
      h('table', {}, [
        h('thead', {}, [
          h(
            'tr',
            {},
            headers.map(function (c) {
              return h('th', { cls: c.num ? 'num' : null, text: c.label === undefined ? c : c.label });
            }),
          ),
        ]),
        h('tbody', {}, rows),
      ]),
    ]);
  }
  function num(v) {
    return h('td', { cls: 'num', text: v });
  }
  function td(v) {
    return h('td', {}, [v]);
  }
  // A count the server estimated (finished states of a big table) is shown with ≈.
  function about(q, s) {
    return (q.estimated.indexOf(s) >= 0 ? '≈ ' : '') + q.counts[s];
  }

  pages.overview = {
    load: function () {
      return Promise.all([api('/queues'), api('/throughput')]).then(function (r) {
        return { queues: r[0], minutes: r[1].minutes };
      });
    },
    render: function (d) {
      var totals = {};
      var estimated = {};
      STATES.forEach(function (s) {
        totals[s] = 0;
      });
      d.queues.forEach(function (q) {
        STATES.forEach(function (s) {
          totals[s] += q.counts[s];
          if (q.estimated.indexOf(s) >= 0) estimated[s] = true;
        });
      });
      var done = d.minutes.reduce(function (a, m) {
        return a + m.completed;
      }, 0);
      var failed = d.minutes.reduce(function (a, m) {
        return a + m.failed;
      }, 0);
      var cards = [
        ['Queues', d.queues.length],
        ['Available', totals.available],
        ['Running', totals.running],
        ['Failed', (estimated.failed ? '≈ ' : '') + totals.failed],
        ['Completed / s (1 h)', rate(done / 3600)],
        ['Failed / s (1 h)', rate(failed / 3600)],
      ];
      var rows = d.queues.map(function (q) {
        var link = h('a', { href: base + '/jobs?queue=' + encodeURIComponent(q.name), text: q.name });
        return h(
          'tr',
          { 'data-queue': q.name },
          [
            td(link),
            td(
              q.paused
                ? h('span', { cls: 'badge paused', text: 'paused' })
                : h('span', { cls: 'muted', text: 'active' }),
            ),
          ]
            .concat(
              STATES.map(function (s) {
                return num(about(q, s));
              }),
            )
            .concat([
              num(ago(q.oldestAvailableAgeMs)),
              num(rate(q.completedPerSecond)),
              num(rate(q.failedPerSecond)),
              td(
                canAct
                  ? button(q.paused ? 'Resume' : 'Pause', function () {
                      var verb = q.paused ? 'resume' : 'pause';
                      act(
                        api('/queues/' + encodeURIComponent(q.name) + '/' + verb, { method: 'POST', body: {} }),
                        'Queue ' + q.name + (q.paused ? ' resumed' : ' paused'),
                      );
                    })
                  : null,
              ),
            ]),
        );
      });
      return h('div', {}, [
        h(
          'div',
          { cls: 'cards' },
          cards.map(function (c) {
            return h('div', { cls: 'card' }, [
              h('div', { cls: 'muted', text: c[0] }),
              h('div', { cls: 'value', text: c[1] }),
            ]);
          }),
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
          [{ label: 'Queue' }, { label: 'Status' }]
            .concat(
              STATES.map(function (s) {
                return { label: s, num: true };
              }),
            )
            .concat([
              { label: 'Oldest waiting', num: true },
              { label: 'Done / s', num: true },
              { label: 'Failed / s', num: true },
              '',
            ]),
          rows.length ? rows : [h('tr', {}, [h('td', { colspan: 13, cls: 'muted', text: 'No queues yet.' })])],
        ),
      ]);
    },
  };
`;
