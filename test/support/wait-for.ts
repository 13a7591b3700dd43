import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The one poll of the tests (and the bench): calls `check` until it returns a truthy value, which
 * it resolves with, and throws after `timeoutMs`. Tests wait on conditions with it, never on a
 * fixed sleep.
 */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  what = 'condition',
  everyMs = 25,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
