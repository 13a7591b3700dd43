import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { typeCheckedOnce } from './type-check-cache.js';

/** A consumer app in miniature: one source file and an installed nestjs-awa of one file. */
async function consumerIn(root: string, name: string): Promise<string> {
  const consumer = join(root, name);
  await mkdir(join(consumer, 'src'), { recursive: true });
  await mkdir(join(consumer, 'node_modules/nestjs-awa/dist'), { recursive: true });
  await writeFile(join(consumer, 'src/main.ts'), 'export const a = 1;\n');
  await writeFile(join(consumer, 'node_modules/nestjs-awa/dist/index.d.ts'), 'export declare const b: number;\n');
  return consumer;
}

/** Stands in for tsc: writes dist/main.js and counts its calls. */
function fakeTypeCheck(consumer: string, calls: string[]) {
  return async () => {
    calls.push(consumer);
    await mkdir(join(consumer, 'dist'), { recursive: true });
    await writeFile(join(consumer, 'dist/main.js'), `compiled in ${consumer}\n`);
  };
}

describe('the type-check cache of the packed apps', () => {
  let root: string;
  const previous = process.env.AWA_PACK_CACHE;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'awa-type-check-cache-'));
    process.env.AWA_PACK_CACHE = join(root, 'cache');
  });
  afterEach(async () => {
    if (previous === undefined) delete process.env.AWA_PACK_CACHE;
    else process.env.AWA_PACK_CACHE = previous;
    await rm(root, { recursive: true, force: true });
  });

  it('type-checks once, then gives a second copy of the same inputs the first build', async () => {
    const calls: string[] = [];
    const first = await consumerIn(root, 'first');
    const second = await consumerIn(root, 'second');
    expect(await typeCheckedOnce('app', first, '5.9.3', fakeTypeCheck(first, calls))).toBe('compiled');
    expect(await typeCheckedOnce('app', second, '5.9.3', fakeTypeCheck(second, calls))).toBe('reused');
    expect(calls).toEqual([first]);
    expect(await readFile(join(second, 'dist/main.js'), 'utf8')).toBe(`compiled in ${first}\n`);
  });

  it.each([
    ['a changed file of the installed tarball', 'node_modules/nestjs-awa/dist/index.d.ts'],
    ['a changed source of the app', 'src/main.ts'],
    ['a new file of the app', 'src/other.ts'],
  ])('type-checks again after %s', async (_, file) => {
    const calls: string[] = [];
    const first = await consumerIn(root, 'first');
    const second = await consumerIn(root, 'second');
    await typeCheckedOnce('app', first, '5.9.3', fakeTypeCheck(first, calls));
    await writeFile(join(second, file), 'export const changed = true;\n');
    expect(await typeCheckedOnce('app', second, '5.9.3', fakeTypeCheck(second, calls))).toBe('compiled');
    expect(calls).toEqual([first, second]);
  });

  it('type-checks again under another TypeScript, and keeps nothing when the type-check fails', async () => {
    const calls: string[] = [];
    const first = await consumerIn(root, 'first');
    await typeCheckedOnce('app', first, '5.9.3', fakeTypeCheck(first, calls));
    const second = await consumerIn(root, 'second');
    expect(await typeCheckedOnce('app', second, '5.9.4', fakeTypeCheck(second, calls))).toBe('compiled');

    const failing = await consumerIn(root, 'failing');
    await writeFile(join(failing, 'src/main.ts'), 'export const a: string = 1;\n');
    const typeError = new Error('TS2322');
    await expect(
      typeCheckedOnce('app', failing, '5.9.3', async () => {
        throw typeError;
      }),
    ).rejects.toBe(typeError);
    const retry = await consumerIn(root, 'retry');
    await writeFile(join(retry, 'src/main.ts'), 'export const a: string = 1;\n');
    expect(await typeCheckedOnce('app', retry, '5.9.3', fakeTypeCheck(retry, calls))).toBe('compiled');
    expect(existsSync(join(retry, 'dist/main.js'))).toBe(true);
  });
});
