import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { packCacheRoot } from './consumer-deps.js';

/**
 * A consumer app's compiled dist/, kept after a type-check that passed, under a key made of every
 * input tsc reads: the installed nestjs-awa (each file of the tarball), the app's own sources,
 * tsconfigs and lock files (which fix its Nest, TypeORM and @types/node), and the TypeScript
 * version. tsc's result is a function of those alone, not of the Node that runs it, so .ci/run's
 * other Node lines take the first line's compiled app instead of type-checking the same inputs
 * again (about 20 s of CPU each on the 2-core CI machine). Any changed file makes a new key.
 */
export async function typeCheckedOnce(
  name: string,
  consumer: string,
  typeScriptVersion: string,
  typeCheck: () => Promise<void>,
): Promise<'compiled' | 'reused'> {
  const hash = createHash('sha256').update(`typescript ${typeScriptVersion}\n`);
  for (const dir of [consumer, join(consumer, 'node_modules/nestjs-awa')]) {
    const skip = dir === consumer ? ['node_modules', 'dist'] : [];
    for (const file of await filesUnder(dir, skip)) {
      hash.update(`${relative(dir, file)}\n`).update(await readFile(file));
    }
  }
  const cached = join(packCacheRoot(), `${name}-compiled-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(join(cached, '.complete'))) {
    await cp(join(cached, 'dist'), join(consumer, 'dist'), { recursive: true });
    return 'reused';
  }
  await typeCheck();
  // Copied beside the final place and renamed into it once complete, as the dependencies are
  // (consumer-deps.ts): a line that loses the race uses the winner's, which is the same.
  await mkdir(packCacheRoot(), { recursive: true });
  const staging = await mkdtemp(join(packCacheRoot(), `${name}-compiled-staging-`));
  try {
    await cp(join(consumer, 'dist'), join(staging, 'dist'), { recursive: true });
    await writeFile(join(staging, '.complete'), `${new Date().toISOString()}\n`);
    await rename(staging, cached);
  } catch {
    await rm(staging, { recursive: true, force: true });
  }
  return 'compiled';
}

/** Every file under `dir` but the top-level names in `skip`, sorted, so the hash is stable. */
async function filesUnder(dir: string, skip: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const top of await readdir(dir, { withFileTypes: true })) {
    if (skip.includes(top.name)) continue;
    const path = join(dir, top.name);
    if (top.isFile()) files.push(path);
    else if (top.isDirectory())
      for (const e of await readdir(path, { recursive: true, withFileTypes: true }))
        if (e.isFile()) files.push(join(e.parentPath, e.name));
  }
  return files.sort();
}
