// The live refresh: the current page's data is polled every refreshMs and rendered when it changed;
// "Pause refresh" stops that (remembered in localStorage). Actions go through act().
import { byId, content, messageOf, notice, refreshMs } from './dom.js';

/** A page of the dashboard: what it loads from the JSON API, and how it shows it. */
export interface Page<T> {
  load(): Promise<T>;
  render(data: T): Node;
}

let current: Page<unknown> | null = null;
let lastData: string | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
let paused = localStorage.getItem('awa-live-paused') === '1';
/** Counts loads, so that only the newest one renders: a poll sent before a click must not paint over its answer. */
let loads = 0;
/** A forced render not done yet: the load that superseded it renders even if its data did not change. */
let forced = false;

/** Loads the page's data; renders only when it changed (or when forced), so open details stay open. */
export async function refresh(force: boolean): Promise<void> {
  if (!current) return;
  const load = ++loads;
  forced ||= force;
  try {
    const data = await current.load();
    if (load !== loads) return;
    const json = JSON.stringify(data);
    if (!forced && json === lastData) return;
    forced = false;
    lastData = json;
    content.replaceChildren(current.render(data));
  } catch (error) {
    if (load === loads) notice(messageOf(error), true);
  }
}

function tick(): void {
  clearTimeout(timer);
  if (!paused) timer = setTimeout(() => void refresh(false).then(tick), refreshMs);
}

function showLive(): void {
  const toggle = byId('live-toggle');
  toggle.textContent = paused ? 'Resume refresh' : 'Pause refresh';
  toggle.setAttribute('aria-pressed', String(paused));
  byId('live-status').textContent = paused ? 'paused' : 'live';
}

/** Runs an action, says how it went, and refreshes the page. */
export function act<T>(promise: Promise<T>, success: string | ((result: T) => string)): Promise<void> {
  return promise.then(
    (result) => {
      notice(typeof success === 'function' ? success(result) : success, false);
      return refresh(true);
    },
    (error: unknown) => notice(messageOf(error), true),
  );
}

/** Shows `page` (none: the page has no data of its own) and keeps it live. */
export function start(page: Page<unknown> | null): void {
  byId('live-toggle').addEventListener('click', () => {
    paused = !paused;
    localStorage.setItem('awa-live-paused', paused ? '1' : '0');
    showLive();
    if (!paused) void refresh(false);
    tick();
  });
  current = page;
  showLive();
  void refresh(true).then(tick);
}
