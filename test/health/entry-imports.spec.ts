import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LIB = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

/** Every package a source file imports at run time, following its relative imports (type-only ones left out). */
function packagesReachedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      if (/^\s*(?:import|export)\s+type\s/.test(match[0].trim())) continue;
      const target = (match[1] ?? match[2])!;
      if (target.startsWith('.')) visit(resolve(dirname(file), target.replace(/\.js$/, '.ts')));
      else packages.add(target);
    }
  };
  visit(resolve(LIB, entry));
  return packages;
}

describe('entry points and the optional @nestjs/terminus peer', () => {
  it('the root entry and nestjs-awa/testing never load @nestjs/terminus', () => {
    for (const entry of ['index.ts', 'testing/index.ts']) {
      const packages = packagesReachedFrom(entry);
      expect(packages).toContain('@nestjs/common'); // the walk does reach the sources
      expect([...packages].filter((p) => p.startsWith('@nestjs/terminus'))).toEqual([]);
    }
  });

  it('nestjs-awa/health is the entry that loads it', () => {
    expect(packagesReachedFrom('health/index.ts')).toContain('@nestjs/terminus');
  });
});
