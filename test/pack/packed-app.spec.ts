import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AwaMigrations } from 'nestjs-awa';
import { waitFor } from '../support/test-app.js';
import { createTestDatabase, queryOnce } from '../support/test-database.js';
import { ConsumerProcess, REPO, cleanEnv, createConsumer, packTarball, run, tsc } from './consumer-project.js';

/** Generous: packing, installing and compiling a project take a while on a loaded 2-core machine. */
const TIMEOUT = 180_000;

/**
 * The acceptance test of the package itself: `npm pack`, install the tarball in a separate Nest
 * app (test/pack/consumer), type-check it against the installed declarations, then run it: two
 * workers, a batch of jobs, one worker SIGKILLed mid-job, and no job lost.
 */
describe('the packed tarball in a separate Nest app', () => {
  let work: string;
  let consumer: string;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const processes: ConsumerProcess[] = [];

  const query = <T>(sql: string, params: unknown[] = []) => queryOnce<T>(db.url, sql, params);
  const start = (script: string, env: Record<string, string> = {}) => {
    const child = new ConsumerProcess(join(consumer, 'dist', script), consumer, { DATABASE_URL: db.url, ...env });
    processes.push(child);
    return child;
  };

  beforeAll(async () => {
    work = realpathSync(await mkdtemp(join(tmpdir(), 'awa-pack-')));
    consumer = join(work, 'consumer');
    db = await createTestDatabase();
  }, TIMEOUT);
  afterAll(async () => {
    processes.forEach((p) => p.kill('SIGKILL'));
    await Promise.all(processes.map((p) => p.exited));
    await db?.drop();
    if (work) await rm(work, { recursive: true, force: true });
  }, TIMEOUT);

  it('installs from the tarball, and every public name imports with its type', async () => {
    const tarball = await packTarball(work);
    await createConsumer(consumer, tarball);

    // A real copy unpacked by npm, not a link to this repo.
    const installed = join(consumer, 'node_modules/nestjs-awa');
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(realpathSync(installed).startsWith(REPO)).toBe(false);
    const { version } = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { version: string };
    const repoVersion = (JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    expect(version).toBe(repoVersion);

    // skipLibCheck is off and noEmitOnError on: the shipped declarations are checked too, and a
    // type error leaves nothing to run. src/awa-api.check.mts fails to compile if a name is `any`.
    await tsc(['-p', consumer], consumer);
    for (const script of ['awa-api.check.mjs', 'migrate.main.mjs', 'worker.main.mjs', 'enqueue.main.mjs']) {
      expect(existsSync(join(consumer, 'dist', script))).toBe(true);
    }
  }, TIMEOUT);

  it('enqueues, handles, and survives a SIGKILLed worker with no job lost', async () => {
    expect(existsSync(join(consumer, 'dist/worker.main.mjs'))).toBe(true); // built by the test above

    // The migrations from 'nestjs-awa/migrations', run by plain TypeORM.
    const migrated = await run(process.execPath, [join(consumer, 'dist/migrate.main.mjs')], consumer, cleanEnv({ DATABASE_URL: db.url }));
    expect(migrated.trim()).toBe(`MIGRATED ${AwaMigrations.map((M) => new M().name).join(',')}`);

    const survivor = start('worker.main.mjs');
    const victim = start('worker.main.mjs');
    const ready = await Promise.all([survivor.waitForLine(/^READY /), victim.waitForLine(/^READY /)]);
    // Both load nestjs-awa from the consumer's node_modules: the tarball, not this repo.
    const installedUrl = pathToFileURL(join(consumer, 'node_modules/nestjs-awa/')).href;
    for (const line of ready) expect(line.split(' ')[3]).toBe(`${installedUrl}dist/lib/index.js`);

    const enqueue = start('enqueue.main.mjs', { COUNT: '12', MS: '1000' });
    const ids = (await enqueue.waitForLine(/^ENQUEUED /)).split(' ')[1]!.split(',');
    expect(ids).toHaveLength(12);
    expect(await enqueue.exited).toEqual({ code: 0, signal: null });

    await victim.waitForLine(/^START /);
    victim.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    const startedBy = (p: ConsumerProcess) => p.lines.filter((l) => l.startsWith('START ')).map((l) => l.split(' ')[1]!);
    const doneBy = (p: ConsumerProcess) => p.lines.filter((l) => l.startsWith('DONE ')).map((l) => l.split(' ')[1]!);
    const interrupted = startedBy(victim).filter((id) => !doneBy(victim).includes(id));
    expect(interrupted.length).toBeGreaterThan(0);

    const rows = await waitFor(async () => {
      const jobs = await query<{ id: string; state: string; attempt: number; errors: Array<{ error: string }> }>(
        'SELECT id::text, state, attempt, errors FROM awa.jobs ORDER BY id');
      return jobs.every((j) => j.state === 'completed') ? jobs : null;
    }, 120_000, 'every job to complete');

    // None lost, none added: exactly the enqueued jobs, all completed.
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    // Each job the dead worker was running was rescued, and the survivor ran it to the end.
    for (const id of interrupted) {
      const row = rows.find((r) => r.id === id)!;
      expect(row.attempt).toBeGreaterThanOrEqual(2);
      expect(row.errors[0]!.error).toMatch(/^(worker instance died|heartbeat stale)/);
      expect(doneBy(survivor)).toContain(id);
    }
    // Every job's handler ran to its end on one worker or the other.
    expect(new Set([...doneBy(survivor), ...doneBy(victim)])).toEqual(new Set(ids));

    survivor.kill('SIGTERM');
    const exit = await survivor.exited;
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
  }, TIMEOUT);
});
