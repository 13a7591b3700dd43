import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AwaMigrations } from 'nestjs-awa';
import { itInBrowser, launchChromium, pageErrors } from '../dashboard/chromium.js';
import { waitFor } from '../support/test-app.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import {
  CONSUMERS,
  ConsumerProcess,
  REPO,
  cleanEnv,
  createConsumer,
  packTarball,
  run,
  tsc,
} from './consumer-project.js';
import { typeCheckedOnce } from './type-check-cache.js';

/** The first run installs each app's dependencies with npm ci (later runs reuse them); compiling takes a while too. */
const INSTALL_TIMEOUT = 300_000;
const RUN_TIMEOUT = 180_000;

export interface ConsumerApp {
  /** Directory under test/pack/consumers. */
  name: string;
  /** Extension of the compiled programs in dist/ ('.js' for CommonJS, '.mjs' for ESM). */
  ext: '.js' | '.mjs';
  /** The file of the installed package that the app must load: the build for its module system. */
  entry: string;
  /** More tsconfig files of the app to type-check it with (other module resolutions apps use). */
  alsoTypeCheckWith?: string[];
}

const readJson = async <T>(file: string) => JSON.parse(await readFile(file, 'utf8')) as T;

/** The scripts and stylesheets a page loads, by the URLs it names them with. */
function assetsOf(html: string): { url: string; type: string }[] {
  const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => ({ url: m[1]!, type: 'javascript' }));
  const styles = [...html.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"/g)].map((m) => ({
    url: m[1]!,
    type: 'css',
  }));
  return [...styles, ...scripts];
}

/**
 * The acceptance test of the package itself: `npm pack`, install the tarball in a separate Nest
 * app with its own locked dependencies (test/pack/consumers/<name>), type-check the app against the
 * installed declarations, then run it: migrations by TypeORM's own runner, two workers, a batch of
 * jobs enqueued in the app's transaction, one worker SIGKILLed mid-job, and no job lost.
 */
export function describePackedApp(app: ConsumerApp): void {
  let work: string;
  let consumer: string;
  let db: TestDatabase;
  const processes: ConsumerProcess[] = [];
  let dashboardUrl: Promise<string> | undefined;

  const query = <T>(sql: string, params: unknown[] = []) => queryOnce<T>(db.url, sql, params);
  const start = (script: string, env: Record<string, string> = {}) => {
    const child = new ConsumerProcess(join(consumer, 'dist', script + app.ext), consumer, {
      DATABASE_URL: db.url,
      ...env,
    });
    processes.push(child);
    return child;
  };

  beforeAll(async () => {
    work = realpathSync(await mkdtemp(join(tmpdir(), `awa-pack-${app.name}-`)));
    consumer = join(work, 'consumer');
    db = await createTestDatabase();
  }, RUN_TIMEOUT);
  afterAll(async () => {
    processes.forEach((p) => p.kill('SIGKILL'));
    await Promise.all(processes.map((p) => p.exited));
    await db?.drop();
    if (work) await rm(work, { recursive: true, force: true });
  }, RUN_TIMEOUT);

  it(
    'installs from the tarball beside its locked Nest and TypeORM, and every public name type-checks',
    async () => {
      const tarball = await packTarball(work);
      await createConsumer(app.name, consumer, tarball);

      // A real copy unpacked by npm, not a link to this repo.
      const installed = join(consumer, 'node_modules/nestjs-awa');
      expect(lstatSync(installed).isSymbolicLink()).toBe(false);
      expect(realpathSync(installed).startsWith(REPO)).toBe(false);
      const { version } = await readJson<{ version: string }>(join(installed, 'package.json'));
      expect(version).toBe((await readJson<{ version: string }>(join(REPO, 'package.json'))).version);

      // The app runs exactly the versions its package.json pins (npm did not swap a peer).
      const { dependencies } = await readJson<{ dependencies: Record<string, string> }>(
        join(CONSUMERS, app.name, 'package.json'),
      );
      for (const peer of ['@nestjs/common', '@nestjs/core', '@nestjs/schedule', '@nestjs/typeorm', 'typeorm', 'pg']) {
        const installed = await readJson<{ version: string }>(join(consumer, 'node_modules', peer, 'package.json'));
        expect(`${peer}@${installed.version}`).toBe(`${peer}@${dependencies[peer]}`);
      }

      // skipLibCheck is off and noEmitOnError on: the shipped declarations are checked against this
      // app's Nest and TypeORM, and a type error leaves nothing to run. src/awa-api.check fails to
      // compile if a name is `any`. Inputs already type-checked (by another Node line of .ci/run)
      // reuse that build: see type-check-cache.ts.
      const { version: typeScript } = await readJson<{ version: string }>(
        join(REPO, 'node_modules/typescript/package.json'),
      );
      await typeCheckedOnce(app.name, consumer, typeScript, async () => {
        await tsc(['-p', consumer], consumer);
        for (const tsconfig of app.alsoTypeCheckWith ?? []) await tsc(['-p', join(consumer, tsconfig)], consumer);
      });
      for (const script of ['awa-api.check', 'migrate.main', 'worker.main', 'enqueue.main', 'dashboard.main']) {
        expect(existsSync(join(consumer, 'dist', script + app.ext))).toBe(true);
      }
    },
    INSTALL_TIMEOUT,
  );

  it(
    'migrates with TypeORM, enqueues in a transaction, handles, and survives a SIGKILLed worker with no job lost',
    async () => {
      expect(existsSync(join(consumer, `dist/worker.main${app.ext}`))).toBe(true); // built by the test above

      // The migrations from 'nestjs-awa/migrations', run by TypeORM's own migration runner.
      const migrated = await run(
        process.execPath,
        [join(consumer, `dist/migrate.main${app.ext}`)],
        consumer,
        cleanEnv({ DATABASE_URL: db.url }),
      );
      expect(migrated.trim()).toBe(`MIGRATED ${AwaMigrations.map((M) => new M().name).join(',')}`);

      const survivor = start('worker.main');
      const victim = start('worker.main');
      const ready = await Promise.all([survivor.waitForLine(/^READY /), victim.waitForLine(/^READY /)]);
      // Both load nestjs-awa, and its entry point nestjs-awa/telemetry (AwaTelemetryModule, with
      // @opentelemetry/api and no SDK), from the app's node_modules (the tarball, not this repo), in
      // the build of the app's own module system.
      const telemetryEntry = app.entry.replace(/index\.js$/, 'telemetry/index.js');
      for (const line of ready)
        expect(line.split(' ').slice(3)).toEqual([
          join(consumer, 'node_modules/nestjs-awa', app.entry),
          join(consumer, 'node_modules/nestjs-awa', telemetryEntry),
        ]);

      // Jobs of 3 s (three rounds on the two workers' four slots): the kill below must land while the
      // victim runs one, also when this test process reads the workers' output seconds late (on CI's
      // 2 cores beside the other Node lines, 1 s jobs were once all done before the kill).
      const enqueue = start('enqueue.main', { COUNT: '12', MS: '3000' });
      const ids = (await enqueue.waitForLine(/^ENQUEUED /)).split(' ')[1]!.split(',');
      expect(ids).toHaveLength(12);
      expect(await enqueue.exited).toEqual({ code: 0, signal: null });

      await victim.waitForLine(/^START /);
      victim.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');
      const startedBy = (p: ConsumerProcess) =>
        p.lines.filter((l) => l.startsWith('START ')).map((l) => l.split(' ')[1]!);
      const doneBy = (p: ConsumerProcess) => p.lines.filter((l) => l.startsWith('DONE ')).map((l) => l.split(' ')[1]!);
      const interrupted = startedBy(victim).filter((id) => !doneBy(victim).includes(id));
      expect(interrupted.length).toBeGreaterThan(0);

      const rows = await waitFor(
        async () => {
          const jobs = await query<{ id: string; state: string; attempt: number; errors: Array<{ error: string }> }>(
            'SELECT id::text, state, attempt, errors FROM awa.all_jobs ORDER BY id',
          );
          return jobs.every((j) => j.state === 'completed') ? jobs : null;
        },
        120_000,
        'every job to complete',
      );

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
    },
    RUN_TIMEOUT,
  );

  /** The URL of the app's dashboard (dist/dashboard.main), started once, on the database migrated above. */
  const dashboard = () =>
    (dashboardUrl ??= (async () => {
      const line = await start('dashboard.main').waitForLine(/^LISTENING /);
      const [, url, ...loaded] = line.split(' ');
      // Served by the tarball's build for the app's module system, not by this repo's lib/: the root
      // entry and the entry point nestjs-awa/dashboard (AwaDashboardModule).
      expect(loaded).toEqual([
        join(consumer, 'node_modules/nestjs-awa', app.entry),
        join(consumer, 'node_modules/nestjs-awa', app.entry.replace(/index\.js$/, 'dashboard/index.js')),
      ]);
      return url!;
    })());

  it(
    "serves the dashboard's page and every script and stylesheet it loads from the installed tarball",
    async () => {
      expect(existsSync(join(consumer, `dist/dashboard.main${app.ext}`))).toBe(true); // built by the first test
      const url = await dashboard();
      expect(new URL(url).pathname).toBe('/awa');
      const page = await fetch(url);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      const html = await page.text();
      const assets = assetsOf(html);
      // The page names the assets it loads: the package's own stylesheet and script, under the path.
      expect(assets).toEqual([
        { url: '/awa/assets/dashboard.css', type: 'css' },
        { url: '/awa/assets/dashboard.js', type: 'javascript' },
      ]);
      for (const asset of assets) {
        const res = await fetch(new URL(asset.url, url));
        const text = await res.text();
        expect([asset.url, res.status, res.headers.get('content-type')]).toEqual([
          asset.url,
          200,
          `text/${asset.type}; charset=utf-8`,
        ]);
        expect(text.trim().length).toBeGreaterThan(0);
      }
    },
    RUN_TIMEOUT,
  );

  itInBrowser(
    'renders the installed dashboard in headless Chromium: the overview lists the queue, with no page error',
    async () => {
      const url = await dashboard();
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        const errors = pageErrors(page);
        await page.goto(url);
        // Rendered by the packed script from the packed API: the app's configured queue.
        await page.locator('tr[data-queue="pack"]').waitFor({ timeout: 30_000 });
        expect(await page.locator('h1').innerText()).toBe('Overview');
        expect(await page.locator('tr[data-queue="pack"] a').innerText()).toBe('pack');
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    RUN_TIMEOUT,
  );
}
