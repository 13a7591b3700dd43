import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ROOT, docFiles, headingAnchors, links, parseMarkdown, relativeName, type ParsedMarkdown } from './markdown.js';

/** Schemes and protocol-relative links are not ours to check; everything else must resolve in the tree. */
const EXTERNAL = /^([a-z][a-z0-9+.-]*:|\/\/)/i;

function brokenLinks(files: string[]): string[] {
  const cache = new Map<string, ParsedMarkdown>();
  const parsed = (file: string) => {
    if (!cache.has(file)) cache.set(file, parseMarkdown(file));
    return cache.get(file)!;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const { line, target } of links(parsed(file))) {
      if (EXTERNAL.test(target)) continue;
      const where = `${relativeName(file)}:${line}: ${target}`;
      const [path = '', anchor] = target.split('#', 2);
      const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      if (!existsSync(destination)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!destination.endsWith('.md') || statSync(destination).isDirectory()) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) broken.push(`${where} (an anchor into a file that is not markdown)`);
        continue;
      }
      if (!headingAnchors(parsed(destination)).has(decodeURIComponent(anchor))) {
        broken.push(`${where} (no heading with that anchor in ${relativeName(destination)})`);
      }
    }
  }
  return broken;
}

describe('documentation links', () => {
  it('every relative link and #anchor of README.md, CONTRIBUTING.md, docs/*.md and bench/README.md resolves', () => {
    expect(brokenLinks([...docFiles(), join(ROOT, 'bench', 'README.md')])).toEqual([]);
  });

  it('docs/README.md lists every page of docs/', () => {
    const index = join(ROOT, 'docs', 'README.md');
    const listed = new Set(
      links(parseMarkdown(index))
        .filter(({ target }) => !EXTERNAL.test(target))
        .map(({ target }) => resolve(dirname(index), target.split('#')[0]!)),
    );
    const pages = readdirSync(join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md') && name !== 'README.md')
      .map((name) => join(ROOT, 'docs', name));
    expect(pages.filter((page) => !listed.has(page)).map(relativeName)).toEqual([]);
  });

  it('refuses a missing file and a missing anchor, and follows the anchors GitHub makes (the check itself)', () => {
    const fixture = join(ROOT, 'test', 'docs', 'fixtures', 'links.md');
    expect(brokenLinks([fixture])).toEqual([
      'test/docs/fixtures/links.md:12: #no-such-heading (no heading with that anchor in test/docs/fixtures/links.md)',
      'test/docs/fixtures/links.md:12: ./missing.md (no such file)',
      'test/docs/fixtures/links.md:12: links.md#options-2 (no heading with that anchor in test/docs/fixtures/links.md)',
    ]);
  });
});
