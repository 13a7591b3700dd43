// The pages' helpers: DOM building, the JSON API client, notices, the confirmation dialog, formats,
// the JSON viewer and tables. The page's settings come from the <body>'s data attributes.

export const body = document.body;
export const base = body.dataset['base'] || '';
export const canAct = body.dataset['actions'] === 'true';
export const refreshMs = Number(body.dataset['refresh']) || 5000;
export const content = byId('content');

/** An element of the page the server rendered (the layout always has it). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | null | undefined | ((event: Event) => void);

/** An element: attrs may hold text, cls (the class), on<event> handlers and plain attributes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Record<string, Attr>,
  children?: Child[],
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k === 'cls' ? 'class' : k, v === true ? '' : String(v));
  }
  for (const c of children ?? []) {
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** A call of the JSON API; rejects with the server's message on an error status. */
export async function api<T>(path: string, options?: { method?: string; body?: unknown }): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { credentials: 'same-origin', headers };
  if (options?.method) init.method = options.method;
  if (options?.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  const res = await fetch(base + '/api' + path, init);
  const data = (await res.json().catch(() => ({}))) as { message?: string };
  if (!res.ok) throw new Error(data.message || res.status + ' ' + res.statusText);
  return data as T;
}

/** The message of an error (a rejected call), for a notice. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export function notice(text: string, isError: boolean): void {
  const n = byId('notice');
  n.textContent = text;
  n.className = isError ? 'error' : '';
  n.hidden = !text;
}

/** Asks in the page's dialog; resolves true on OK. */
export function confirmBox(text: string): Promise<boolean> {
  const box = byId('confirm');
  byId('confirm-text').textContent = text;
  box.hidden = false;
  const ok = byId<HTMLButtonElement>('confirm-ok');
  const no = byId<HTMLButtonElement>('confirm-cancel');
  return new Promise((resolve) => {
    const done = (answer: boolean) => {
      box.hidden = true;
      ok.removeEventListener('click', yes);
      no.removeEventListener('click', nope);
      resolve(answer);
    };
    const yes = () => done(true);
    const nope = () => done(false);
    ok.addEventListener('click', yes);
    no.addEventListener('click', nope);
    ok.focus();
  });
}

export function ago(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '–';
}

export function rate(perSecond: number): string {
  return perSecond ? perSecond.toFixed(perSecond < 1 ? 3 : 1) : '0';
}

export function stateBadge(state: string): HTMLElement {
  return h('span', { cls: 'state state-' + state, text: state });
}

export function button(label: string, onclick: () => void, cls?: string | null): HTMLButtonElement {
  return h('button', { type: 'button', cls, text: label, onclick });
}

/** JSON as nested, collapsible details. */
function jsonView(value: unknown, label: string | null, open: boolean): HTMLElement {
  if (value === null || typeof value !== 'object') {
    const cls = typeof value === 'string' ? 's' : 'n';
    return h('div', {}, [
      label ? h('span', { cls: 'k', text: label + ': ' }) : null,
      h('span', { cls, text: JSON.stringify(value) }),
    ]);
  }
  const entries = Object.entries(value);
  const isArray = Array.isArray(value);
  const summary = (label ? label + ': ' : '') + (isArray ? '[' + entries.length + ']' : '{' + entries.length + '}');
  return h('details', { open }, [
    h('summary', { text: summary }),
    ...entries.map(([k, v]) => jsonView(v, isArray ? null : k, false)),
  ]);
}

export function jsonBlock(value: unknown): HTMLElement {
  return h('div', { cls: 'json' }, [jsonView(value, null, true)]);
}

/** A column heading: its text, or { label, num } for a right-aligned numeric column. */
export type Heading = string | { label: string; num?: boolean };

export function table(headers: Heading[], rows: HTMLElement[]): HTMLElement {
  return h('div', { cls: 'table-wrap' }, [
    h('table', {}, [
      h('thead', {}, [
        h(
          'tr',
          {},
          headers.map((c) =>
            typeof c === 'string' ? h('th', { text: c }) : h('th', { cls: c.num ? 'num' : null, text: c.label }),
          ),
        ),
      ]),
      h('tbody', {}, rows),
    ]),
  ]);
}

export function num(v: string | number): HTMLElement {
  return h('td', { cls: 'num', text: v });
}

export function td(v: Child): HTMLElement {
  return h('td', {}, [v]);
}
