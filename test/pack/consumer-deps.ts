import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The dependencies of a consumer app (test/pack/consumers/<name>), installed by `npm ci` from its
 * own lock file into a cache directory named after that lock file's hash: the first run installs
 * (from npm's cache when it has the packages, else the registry), later runs reuse it. Set
 * AWA_PACK_CACHE to move the cache; delete it to start over.
 */
export async function cachedDependencies(template: string, name: string, env: Record<string, string>): Promise<string> {
  const root = packCacheRoot();
  const hash = createHash('sha256')
    .update(await readFile(join(template, 'package.json')))
    .update(await readFile(join(template, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16);
  const dir = join(root, `${name}-${hash}`);
  if (existsSync(join(dir, '.complete'))) return dir;

  // Installed beside the final place and renamed into it once complete: `dir` only ever exists
  // complete, so an interrupted install leaves nothing a later run would take for complete, and a
  // run that loses a race with another (rename fails: `dir` exists) uses the winner's.
  await mkdir(root, { recursive: true });
  const staging = await mkdtemp(join(root, `${name}-staging-`));
  try {
    await copyFile(join(template, 'package.json'), join(staging, 'package.json'));
    await copyFile(join(template, 'package-lock.json'), join(staging, 'package-lock.json'));
    await exec('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], staging, env);
    await writeFile(join(staging, '.complete'), `${new Date().toISOString()}\n`);
    await rename(staging, dir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (existsSync(join(dir, '.complete'))) return dir; // another run finished it first
    throw error;
  }
  return dir;
}

/** Where the consumer apps' dependencies (and their compiled builds) are kept between runs. */
export function packCacheRoot(): string {
  return process.env.AWA_PACK_CACHE ?? join(tmpdir(), 'nestjs-awa-pack-cache');
}

/**
 * `to`/node_modules as a copy of the cached node_modules: hard links where the file system allows
 * (fast, no data copied), else a plain copy. npm's hidden lock file is left out, so that npm
 * rewriting it after installing the tarball can never change the cache's copy through a link.
 */
export async function copyDependencies(cached: string, to: string, env: Record<string, string>): Promise<void> {
  const from = join(cached, 'node_modules');
  const target = join(to, 'node_modules');
  try {
    await exec('cp', ['-al', from, target], to, env);
  } catch {
    await rm(target, { recursive: true, force: true });
    await cp(from, target, { recursive: true, verbatimSymlinks: true });
  }
  await rm(join(target, '.package-lock.json'), { force: true });
}

function exec(file: string, args: string[], cwd: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed (${error.code}):\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
