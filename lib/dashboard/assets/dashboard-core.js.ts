/**
 * The script's helpers: DOM building, the JSON API client, dialogs, JSON viewer, chart and live refresh
 * (browser JavaScript, served as is).
 */
export const DASHBOARD_CORE_JS = `
(function () {
  'use strict';
  var body = document.body;
  var base = body.dataset.base || '';
  var canAct = body.dataset.actions === 'true';
  var refreshMs = Number(body.dataset.refresh) || 5000;
  var content = document.getElementById('content');
  var SVG = 'http://www.w3.org/2000/svg';

  /** An element: attrs may hold text, class, on<event> handlers and plain attributes. */
  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) return;
      if (k === 'text') el.textContent = String(v);
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k === 'cls' ? 'class' : k, v === true ? '' : String(v));
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
    });
    return el;
  }

  function api(path, options) {
    var init = { credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (options && options.method) init.method = options.method;
    if (options && options.body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    return fetch(base + '/api' + path, init).then(function (res) {
      return res
        .json()
        .catch(function () {
          return {};
        })
        .then(function (data) {
          if (!res.ok) throw new Error(data.message || res.status + ' ' + res.statusText);
          return data;
        });
    });
  }

  function notice(text, isError) {
    var n = document.getElementById('notice');
    n.textContent = text;
    n.className = isError ? 'error' : '';
    n.hidden = !text;
  }

  function confirmBox(text) {
    var box = document.getElementById('confirm');
    document.getElementById('confirm-text').textContent = text;
    box.hidden = false;
    return new Promise(function (resolve) {
      function done(answer) {
        box.hidden = true;
        ok.removeEventListener('click', yes);
        no.removeEventListener('click', nope);
        resolve(answer);
      }
      var ok = document.getElementById('confirm-ok'),
        no = document.getElementById('confirm-cancel');
      function yes() {
        done(true);
      }
      function nope() {
        done(false);
      }
      ok.addEventListener('click', yes);
      no.addEventListener('click', nope);
      ok.focus();
    });
  }

  function ago(ms) {
    if (ms === null || ms === undefined) return '–';
    var s = Math.max(0, ms) / 1000;
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 86400) return (s / 3600).toFixed(1) + ' h';
    return (s / 86400).toFixed(1) + ' d';
  }
  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : '–';
  }
  function rate(perSecond) {
    return perSecond ? perSecond.toFixed(perSecond < 1 ? 3 : 1) : '0';
  }
  function stateBadge(state) {
    return h('span', { cls: 'state state-' + state, text: state });
  }
  function button(label, onclick, cls) {
    return h('button', { type: 'button', cls: cls, text: label, onclick: onclick });
  }

  /** Runs an action, says how it went, and refreshes the page. */
  function act(promise, success) {
    return promise.then(
      function (result) {
        notice(typeof success === 'function' ? success(result) : success, false);
        return refresh(true);
      },
      function (error) {
        notice(error.message, true);
      },
    );
  }

  /** JSON as nested, collapsible details. */
  function jsonView(value, label, open) {
    if (value === null || typeof value !== 'object') {
      var cls = typeof value === 'string' ? 's' : 'n';
      return h('div', {}, [
        label ? h('span', { cls: 'k', text: label + ': ' }) : null,
        h('span', { cls: cls, text: JSON.stringify(value) }),
      ]);
    }
    var keys = Object.keys(value);
    var summary =
      (label ? label + ': ' : '') + (Array.isArray(value) ? '[' + keys.length + ']' : '{' + keys.length + '}');
    return h(
      'details',
      { open: open },
      [h('summary', { text: summary })].concat(
        keys.map(function (k) {
          return jsonView(value[k], Array.isArray(value) ? null : k, false);
        }),
      ),
    );
  }
  function jsonBlock(value) {
    return h('div', { cls: 'json' }, [jsonView(value, null, true)]);
  }

  /** Completed and failed jobs per minute as stacked bars. */
  function chart(minutes) {
    var width = Math.max(300, Math.round((content.clientWidth || 630) - 30)),
      height = 140,
      top = 10,
      bottom = 18,
      barW = width / Math.max(1, minutes.length);
    var max = Math.max(
      1,
      Math.max.apply(
        null,
        minutes.map(function (m) {
          return m.completed + m.failed;
        }),
      ),
    );
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + (height + bottom));
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', 'completed and failed jobs per minute, last hour');
    function add(tag, attrs, text) {
      var el = document.createElementNS(SVG, tag);
      Object.keys(attrs).forEach(function (k) {
        el.setAttribute(k, attrs[k]);
      });
      if (text !== undefined) el.textContent = text;
      svg.append(el);
      return el;
    }
    add('line', { x1: 0, x2: width, y1: height, y2: height, class: 'axis' });
    minutes.forEach(function (m, i) {
      var hc = (m.completed / max) * (height - top),
        hf = (m.failed / max) * (height - top);
      var x = i * barW + 1,
        w = Math.max(1, barW - 2);
      var g = add('g', {});
      var t = document.createElementNS(SVG, 'title');
      t.textContent =
        new Date(m.minute).toLocaleTimeString() + ': ' + m.completed + ' completed, ' + m.failed + ' failed';
      g.append(t);
      [
        ['completed', height - hc, hc],
        ['failed', height - hc - hf, hf],
      ].forEach(function (b) {
        if (b[2] <= 0) return;
        var r = document.createElementNS(SVG, 'rect');
        [
          ['class', b[0]],
          ['x', x],
          ['y', b[1]],
          ['width', w],
          ['height', b[2]],
        ].forEach(function (a) {
          r.setAttribute(a[0], a[1]);
        });
        g.append(r);
      });
    });
    add('text', { x: 2, y: top + 2 }, max + ' / min');
    add('text', { x: 2, y: height + 14 }, '-60 min');
    add('text', { x: width / 2 - 14, y: height + 14 }, '-30 min');
    add('text', { x: width - 24, y: height + 14 }, 'now');
    return svg;
  }

  var pages = {};
  var current = null,
    lastData = null,
    timer = null;
  var paused = localStorage.getItem('awa-live-paused') === '1';

  /** Loads the page's data; renders only when it changed (or when forced), so open details stay open. */
  function refresh(force) {
    if (!current) return Promise.resolve();
    return current
      .load()
      .then(function (data) {
        var json = JSON.stringify(data);
        if (!force && json === lastData) return;
        lastData = json;
        var view = current.render(data);
        content.replaceChildren(view);
      })
      .catch(function (error) {
        notice(error.message, true);
      });
  }
  function tick() {
    clearTimeout(timer);
    if (!paused)
      timer = setTimeout(function () {
        refresh(false).then(tick);
      }, refreshMs);
  }
  function showLive() {
    var toggle = document.getElementById('live-toggle');
    toggle.textContent = paused ? 'Resume refresh' : 'Pause refresh';
    toggle.setAttribute('aria-pressed', String(paused));
    document.getElementById('live-status').textContent = paused ? 'paused' : 'live';
  }
  document.getElementById('live-toggle').addEventListener('click', function () {
    paused = !paused;
    localStorage.setItem('awa-live-paused', paused ? '1' : '0');
    showLive();
    if (!paused) refresh(false);
    tick();
  });

  var awa = {
    h: h,
    api: api,
    notice: notice,
    confirmBox: confirmBox,
    ago: ago,
    when: when,
    rate: rate,
    stateBadge: stateBadge,
    button: button,
    act: act,
    jsonBlock: jsonBlock,
    chart: chart,
    base: base,
    canAct: canAct,
    body: body,
    refresh: refresh,
    pages: pages,
  };
`;
