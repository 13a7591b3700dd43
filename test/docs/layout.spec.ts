import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './markdown.js';

/** The folders CONTRIBUTING.md's "Layout" section lists: its items that start with a `path/` in backticks. */
function listedFolders(): string[] {
  const text = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const section = /^## Layout\b.*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(text);
  if (!section) throw new Error('CONTRIBUTING.md has no "## Layout" section');
  return [...section[1]!.matchAll(/^\s*[-*] `([^`]+)\/`/gm)].map((match) => match[1]!);
}

function foldersUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => [`${dir}/${entry.name}`, ...foldersUnder(`${dir}/${entry.name}`)]);
}

/** Top-level folders of the repository: not .git, and not the ones .gitignore keeps out (node_modules/, dist/, ...). */
function topLevelFolders(): string[] {
  const ignored = readFileSync(join(ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/^\//, '').replace(/\/$/, ''))
    .filter((line) => line !== '' && !line.startsWith('#'));
  return readdirSync(ROOT, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== '.git' && !ignored.includes(entry.name))
    .map((entry) => entry.name);
}

describe("CONTRIBUTING.md's layout", () => {
  it('lists every top-level folder and every folder of lib/, and nothing that does not exist', () => {
    const actual = [...topLevelFolders(), ...foldersUnder('lib')].sort();
    const listed = listedFolders();
    expect({
      missing: actual.filter((folder) => !listed.includes(folder)),
      stale: listed.filter((f) => !actual.includes(f)),
    }).toEqual({
      missing: [],
      stale: [],
    });
  });
});
