import type { TestingModule } from '@nestjs/testing';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const SCRIPT = new URL('./unique-enqueuer.mjs', import.meta.url).pathname;
const BUILT = new URL('../../dist/lib/index.js', import.meta.url).pathname;
const CALLS = 1_000;
/** The advisory lock the test holds until both processes are ready, so that they start together. */
const START_LOCK = 8802;

interface EnqueuerResult {
  inserted: number;
  duplicates: number;
  ids: string[];
  errors: string[];
}

/** A child process running unique-enqueuer.mjs: resolves `ready` on READY and `result` on RESULT. */
function startEnqueuer(url: string) {
  const child: ChildProcess = spawn(process.execPath, [SCRIPT], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      AWA_URL: url,
      AWA_CALLS: String(CALLS),
      AWA_START_LOCK: String(START_LOCK),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const lines = createInterface({ input: child.stdout! });
  const line = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      lines.on('line', (l) => l.startsWith(prefix) && resolve(l.slice(prefix.length)));
      child.on('exit', (code) => reject(new Error(`enqueuer exited (${code}) before ${prefix}: ${stderr}`)));
    });
  return {
    ready: line('READY'),
    result: line('RESULT ').then((json) => JSON.parse(json) as EnqueuerResult),
    exited: new Promise((resolve) => child.on('exit', resolve)),
    kill: () => child.kill('SIGKILL'),
  };
}

/** Two real processes enqueue the same unique job at once: the unique index lets exactly one in. */
describe('unique jobs across processes', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` (npm test does)`);
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url }); // applies the migrations
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it(`${CALLS} concurrent calls in each of two processes insert one job; every other call is its duplicate`, async () => {
    const dataSource = app.get(DataSource);
    const starter = dataSource.createQueryRunner();
    await starter.query('SELECT pg_advisory_lock($1)', [START_LOCK]);
    const enqueuers = [startEnqueuer(db.url), startEnqueuer(db.url)];
    try {
      await Promise.all(enqueuers.map((e) => e.ready));
      await waitFor(
        async () =>
          (
            await dataSource.query(
              `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
              [START_LOCK],
            )
          )[0].n === 2,
        30_000,
        'both processes at the start lock',
      );
      await starter.query('SELECT pg_advisory_unlock($1)', [START_LOCK]);
      const results = await Promise.all(enqueuers.map((e) => e.result));
      const rows = await app
        .get(DataSource)
        .query(`SELECT id::text, state FROM awa.all_jobs WHERE kind = 'race.unique'`);
      expect(rows).toHaveLength(1);
      expect(results.flatMap((r) => r.errors)).toEqual([]);
      expect(results.reduce((n, r) => n + r.inserted, 0)).toBe(1);
      expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(2 * CALLS - 1);
      expect(results.flatMap((r) => r.ids)).toEqual([rows[0].id, rows[0].id]);
      await Promise.all(enqueuers.map((e) => e.exited));
    } finally {
      enqueuers.forEach((e) => e.kill());
      await starter.release();
    }
  }, 120_000);
});
