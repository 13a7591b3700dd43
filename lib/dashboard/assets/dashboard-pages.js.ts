/** The job detail, schedules and instances pages, and the start of the script. (browser JavaScript, served as is). */
export const DASHBOARD_PAGES_JS = `
  pages.job = {
    load: function () {
      return api('/jobs/' + body.dataset.jobId);
    },
    render: function (d) {
      var j = d.job,
        lease = d.lease;
      var actions = canAct
        ? h('div', { cls: 'toolbar' }, [
            button(
              'Retry',
              function () {
                act(api('/jobs/' + j.id + '/retry', { method: 'POST', body: {} }), function (r) {
                  return 'retry: ' + r.outcome;
                });
              },
              'primary',
            ),
            button('Cancel', function () {
              act(api('/jobs/' + j.id + '/cancel', { method: 'POST', body: {} }), function (r) {
                return 'cancel: ' + r.outcome;
              });
            }),
            button(
              'Delete',
              function () {
                confirmBox('Delete job ' + j.id + '?').then(function (yes) {
                  if (yes)
                    api('/jobs/' + j.id, { method: 'DELETE' }).then(
                      function (r) {
                        if (r.outcome === 'deleted') location.href = base + '/jobs';
                        else notice('delete: ' + r.outcome, true);
                      },
                      function (e) {
                        notice(e.message, true);
                      },
                    );
                });
              },
              'danger',
            ),
          ])
        : null;
      var facts = [
        ['State', stateBadge(j.state)],
        ['Queue', j.queue],
        ['Kind', j.kind],
        ['Attempt', j.attempt + ' of ' + j.maxAttempts],
        ['Priority', j.priority],
        ['Tags', j.tags.join(', ') || '–'],
        ['Unique key', j.uniqueKey || '–'],
        ['Snoozes', j.snoozes],
        ['Created', when(j.createdAt)],
        ['Run at', when(j.runAt)],
        ['Attempted', when(j.attemptedAt)],
        ['Finalized', when(j.finalizedAt)],
      ];
      var kv = function (list) {
        return h(
          'dl',
          { cls: 'kv' },
          list.flatMap(function (f) {
            return [h('dt', { text: f[0] }), h('dd', {}, [f[1]])];
          }),
        );
      };
      var timeline = j.errors.map(function (e) {
        return h('li', {}, [
          h('strong', { text: 'attempt ' + e.attempt }),
          ' ',
          h('span', { cls: 'muted', text: when(e.at) }),
          h('pre', { text: e.error }),
        ]);
      });
      var last = { completed: 'completed', running: 'attempt ' + j.attempt + ' running since' }[j.state];
      if (last)
        timeline.push(
          h('li', { cls: 'ok' }, [
            h('strong', { text: last }),
            ' ',
            h('span', { cls: 'muted', text: when(j.state === 'running' ? j.attemptedAt : j.finalizedAt) }),
          ]),
        );
      return h('div', {}, [
        actions,
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
          timeline.length
            ? h('ol', { cls: 'timeline' }, timeline)
            : h('p', { cls: 'muted', text: 'No error so far.' }),
        ]),
      ]);
    },
  };

  pages.schedules = {
    load: function () {
      return api('/schedules');
    },
    render: function (d) {
      if (!d.available) return h('p', { cls: 'muted', text: 'Periodic jobs are not available in this app.' });
      var rows = d.schedules.map(function (s) {
        var n = encodeURIComponent(s.name);
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
                  button(s.paused ? 'Resume' : 'Pause', function () {
                    act(
                      api('/schedules/' + n + (s.paused ? '/resume' : '/pause'), { method: 'POST', body: {} }),
                      s.name + (s.paused ? ' resumed' : ' paused'),
                    );
                  }),
                  button('Run now', function () {
                    act(api('/schedules/' + n + '/run', { method: 'POST', body: {} }), s.name + ': enqueued');
                  }),
                ])
              : null,
          ),
        ]);
      });
      return table(
        ['Name', 'Kind', 'Queue', 'Cron', 'Status', 'Next fire', 'Last fire', ''],
        rows.length ? rows : [h('tr', {}, [h('td', { colspan: 8, cls: 'muted', text: 'No periodic job.' })])],
      );
    },
  };

  pages.instances = {
    load: function () {
      return api('/instances');
    },
    render: function (list) {
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
        list.map(function (i) {
          return h('tr', { 'data-instance': i.id }, [
            td(h('code', { text: i.id })),
            td(i.hostname),
            num(i.pid),
            td(i.queues.join(', ')),
            td(i.leader ? h('span', { cls: 'badge leader', text: 'leader' }) : 'follower'),
            num(i.leases),
            td(ago(i.heartbeat_age_ms) + ' ago'),
            td(when(i.started_at)),
          ]);
        }),
      );
    },
  };

  current = pages[body.dataset.page] || null;
  showLive();
  refresh(true).then(tick);
  window.awa = awa;
})();
`;
