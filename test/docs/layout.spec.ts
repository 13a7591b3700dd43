import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './markdown.js';

/** The folders a "## Layout" section lists: its items that start with a `path/` in backticks. */
function listedFolders(markdown: string): string[] {
  const section = /^## Layout\b.*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(markdown);
  if (!section) throw new Error('no "## Layout" section');
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

/** Folders of the tree the layout does not list, and folders it lists that are not in the tree. */
function layoutDrift(markdown: string): { missing: string[]; stale: string[] } {
  const actual = [...topLevelFolders(), ...foldersUnder('lib')].sort();
  const listed = listedFolders(markdown);
  return {
    missing: actual.filter((folder) => !listed.includes(folder)),
    stale: listed.filter((folder) => !actual.includes(folder)),
  };
}

describe("CONTRIBUTING.md's layout", () => {
  const contributing = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');

  it('lists every top-level folder and every folder of lib/, and nothing that does not exist', () => {
    expect(layoutDrift(contributing)).toEqual({ missing: [], stale: [] });
  });

  it('reports a folder left out and a folder that is gone (the check itself)', () => {
    const drifted = contributing.replace(/^- `lib\/util\/`/m, '- `lib/utilities/`');
    expect(drifted).not.toEqual(contributing);
    expect(layoutDrift(drifted)).toEqual({ missing: ['lib/util'], stale: ['lib/utilities'] });
  });
});
