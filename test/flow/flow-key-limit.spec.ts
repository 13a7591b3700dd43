import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AdminValidationError, JobHandler, QueueAdmin, QueueProducer, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';

/** Handlers that hold every attempt until the test releases it, counting the attempts of each key in flight. */
@Injectable()
class GatedHandlers {
  private readonly gates: Array<() => void> = [];
  private readonly inFlight = new Map<string, number>();
  /** Per key: the attempts of the key in flight at each start, counting the one starting. */
  readonly startsAt = new Map<string, number[]>();
  open = false;

  @JobHandler('limit.run', { queue: 'limited' })
  async run(job: Job<{ key: string }>) {
    const { key } = job.args;
    const n = (this.inFlight.get(key) ?? 0) + 1;
    this.inFlight.set(key, n);
    this.startsAt.set(key, [...(this.startsAt.get(key) ?? []), n]);
    if (!this.open) await new Promise<void>((resolve) => this.gates.push(resolve));
    this.inFlight.set(key, this.inFlight.get(key)! - 1);
  }

  /** Lets every held attempt end (in one synchronous step), and later ones run through if `open`. */
  release(open: boolean): void {
    this.open = open;
    this.gates.splice(0).forEach((resolve) => resolve());
  }
}

/** QueueAdmin's per-key limits against a keyed queue (keyConcurrency 1) on one instance. */
describe('a per-key limit set at run time', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let handlers: GatedHandlers;
  const sql = (text: string, values?: unknown[]) => app.get(DataSource).query(text, values);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [GatedHandlers],
      awa: { queues: { ...FAST_OPTIONS.queues, limited: { concurrency: 20, keyConcurrency: 1, pollInterval: 200 } } },
    });
    admin = app.get(QueueAdmin);
    handlers = app.get(GatedHandlers);
  });
  afterAll(async () => {
    handlers?.release(true);
    await app?.close();
    await db?.drop();
  });

  const enqueue = (key: string, count: number) =>
    app
      .get(QueueProducer)
      .enqueueMany(Array.from({ length: count }, () => ({ kind: 'limit.run', args: { key }, concurrencyKey: key })));
  /** Leases held now, per key of `keys` (0 when none). */
  const leases = async (keys: string[]) => {
    const rows = await sql(
      `SELECT concurrency_key AS key, count(*)::int AS n FROM awa.active_leases
        WHERE concurrency_key = ANY($1) GROUP BY 1`,
      [keys],
    );
    return Object.fromEntries(keys.map((k) => [k, rows.find((r: { key: string }) => r.key === k)?.n ?? 0]));
  };
  const waitLeases = (expected: Record<string, number>) =>
    waitFor(
      async () => JSON.stringify(await leases(Object.keys(expected))) === JSON.stringify(expected),
      15_000,
      `leases ${JSON.stringify(expected)}`,
    );
  const completed = async (keys: string[]) =>
    (
      await sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed' AND concurrency_key = ANY($1)`, [
        keys,
      ])
    )[0].n as number;

  it("raising one key's limit lets it run more attempts at once than the others", async () => {
    await enqueue('a', 4);
    await enqueue('b', 4);
    await enqueue('c', 4);
    await waitLeases({ a: 1, b: 1, c: 1 });
    // Key a is at its limit (saturated); the new limit must free it without any attempt ending.
    await admin.setKeyConcurrency('limited', 'a', 3);
    await waitLeases({ a: 3, b: 1, c: 1 });
    // A lease is written before its handler starts: release only once all three of a's are in their handlers.
    await waitFor(async () => (handlers.startsAt.get('a') ?? []).includes(3), 15_000, "three of a's attempts at once");
    handlers.release(true);
    await waitFor(async () => (await completed(['a', 'b', 'c'])) === 12, 15_000, 'every job to complete');
    expect(Math.max(...handlers.startsAt.get('a')!)).toBe(3);
    expect(Math.max(...handlers.startsAt.get('b')!)).toBe(1);
    expect(Math.max(...handlers.startsAt.get('c')!)).toBe(1);
    expect((await admin.keyStates('limited')).keys).toEqual([
      expect.objectContaining({ key: 'a', running: 0, limit: 3 }),
      expect.objectContaining({ key: 'b', running: 0, limit: null }),
      expect.objectContaining({ key: 'c', running: 0, limit: null }),
    ]);
  });

  it("null gives the key the queue's keyConcurrency back: no attempt starts beside another after it", async () => {
    handlers.release(false);
    await admin.setKeyConcurrency('limited', 'd', 2);
    await enqueue('d', 4);
    await waitLeases({ d: 2 });
    await admin.setKeyConcurrency('limited', 'd', null);
    handlers.release(true);
    await waitFor(async () => (await completed(['d'])) === 4, 15_000, "d's jobs to complete");
    // Two started side by side under the limit of 2; every later one alone.
    expect(handlers.startsAt.get('d')!.sort()).toEqual([1, 1, 1, 2]);
  });

  it('keyStates pages the keys of a queue with their running count, waiting flag, limit and hold', async () => {
    handlers.release(false);
    await admin.setKeyConcurrency('limited', 'z', 0);
    await enqueue('z', 1);
    const first = await admin.keyStates('limited', { limit: 2 });
    expect(first.keys.map((k) => k.key)).toEqual(['a', 'b']);
    expect(first.next).toBe('b');
    const rest = await admin.keyStates('limited', { after: first.next!, limit: 10 });
    expect(rest.next).toBeNull();
    expect(rest.keys.map((k) => k.key)).toEqual(['c', 'd', 'z']);
    expect(rest.keys[2]).toEqual({
      key: 'z',
      running: 0,
      waiting: true,
      limit: 0,
      heldUntil: null,
      lastClaimedAt: null,
    });
    expect(rest.keys[0]!.lastClaimedAt).toBeInstanceOf(Date);
    expect((await admin.keyStates('nothing here')).keys).toEqual([]);
  });

  describe('input checks', () => {
    const bad: Array<[string, () => Promise<unknown>, string]> = [
      ['an empty queue name', () => admin.setKeyConcurrency('', 'k', 1), 'queue'],
      ['a queue name over 100 characters', () => admin.setKeyConcurrency('q'.repeat(101), 'k', 1), 'queue'],
      ['an empty key', () => admin.setKeyConcurrency('limited', '', 1), 'key'],
      ['a key over 200 characters', () => admin.setKeyConcurrency('limited', 'k'.repeat(201), 1), 'key'],
      ['a key with a NUL character', () => admin.setKeyConcurrency('limited', 'a\u0000b', 1), 'key'],
      ['a key that is not a string', () => admin.setKeyConcurrency('limited', 7 as never, 1), 'key'],
      ['a negative limit', () => admin.setKeyConcurrency('limited', 'k', -1), 'limit'],
      ['a fractional limit', () => admin.setKeyConcurrency('limited', 'k', 1.5), 'limit'],
      ['a limit beyond an integer column', () => admin.setKeyConcurrency('limited', 'k', 2 ** 31), 'limit'],
      ['an undefined limit', () => admin.setKeyConcurrency('limited', 'k', undefined as never), 'limit'],
      ['a limit given as text', () => admin.setKeyConcurrency('limited', 'k', '3' as never), 'limit'],
      ['a key listing of an empty queue name', () => admin.keyStates(''), 'queue'],
      ['a key page limit of 0', () => admin.keyStates('limited', { limit: 0 }), 'page.limit'],
      ['an empty key cursor', () => admin.keyStates('limited', { after: '' }), 'page.after'],
      ['an unknown key page option', () => admin.keyStates('limited', { from: 'a' } as never), 'page.from'],
    ];
    it.each(bad)('refuses %s with an AdminValidationError naming the field', async (_what, call, field) => {
      const before = await sql(`SELECT count(*)::int AS n FROM awa.flow_keys`);
      const error = await caught(call);
      expect(error).toBeInstanceOf(AdminValidationError);
      expect(error).toMatchObject({ field });
      expect(await sql(`SELECT count(*)::int AS n FROM awa.flow_keys`)).toEqual(before);
    });
  });
});
