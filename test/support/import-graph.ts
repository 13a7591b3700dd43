import { readFileSync, readdirSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's sources. */
export const LIB = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;
const TYPE_ONLY = /^\s*(?:import|export)\s+type\s/;

export interface SourceImports {
  /** Files of lib/ imported by path, relative to lib/ (`worker/in-flight-job.ts`). */
  files: string[];
  /** Packages imported by name. */
  packages: string[];
}

/** What one file of lib/ (relative to lib/) imports; type-only imports too when `types` is set. */
export function importsOf(file: string, { types = false } = {}): SourceImports {
  const path = resolve(LIB, file);
  const files: string[] = [];
  const packages: string[] = [];
  for (const match of readFileSync(path, 'utf8').matchAll(IMPORT)) {
    if (!types && TYPE_ONLY.test(match[0].trim())) continue;
    const target = (match[1] ?? match[2])!;
    if (target.startsWith('.')) files.push(relative(LIB, resolve(dirname(path), target.replace(/\.js$/, '.ts'))));
    else packages.push(target);
  }
  return { files, packages };
}

/** Every file and package reached at run time from an entry of lib/, following its relative imports. */
export function reachedFrom(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const imports = importsOf(file);
    imports.packages.forEach((p) => packages.add(p));
    imports.files.forEach(visit);
  };
  visit(entry);
  return { files, packages };
}

/** Every .ts file of lib/, relative to lib/. */
export function libFiles(): string[] {
  return readdirSync(LIB, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => name.split('\\').join('/'));
}

/** A predicate: the file (relative to lib/) is inside `folder`. */
export const inFolder = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

/** Every import (type-only ones too) from one of `files` into `folder`, as `from -> to`. */
export const importsInto = (files: string[], folder: string): string[] =>
  files.flatMap((file) =>
    importsOf(file, { types: true })
      .files.filter(inFolder(folder))
      .map((target) => `${file} -> ${target}`),
  );
