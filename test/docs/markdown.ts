import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (this file is test/docs/markdown.ts). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The user documentation: README.md and every page of docs/ (CONTRIBUTING.md for its links too). */
export function docFiles(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(ROOT, 'docs', name));
  return [join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md'), ...pages];
}

export function relativeName(file: string): string {
  return relative(ROOT, file);
}

export interface CodeBlock {
  file: string;
  /** 1-based line of the block's first code line (the one after the opening fence). */
  line: number;
  lang: string;
  /** Marked `ts fragment` in its info string, or `<!-- fragment -->` on the line before the fence. */
  fragment: boolean;
  code: string;
}

export interface ProseLine {
  line: number;
  text: string;
}

/** A markdown file cut into its fenced code blocks and the prose between them. */
export interface ParsedMarkdown {
  blocks: CodeBlock[];
  prose: ProseLine[];
}

export function parseMarkdown(file: string): ParsedMarkdown {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  const prose: ProseLine[] = [];
  let open: { fence: string; info: string; start: number; body: string[]; fragment: boolean } | null = null;
  let previous = '';
  for (const [index, text] of lines.entries()) {
    if (open) {
      if (/^`+$/.test(text.trim()) && text.trim().length >= open.fence.length) {
        const [lang = '', ...flags] = open.info.split(/\s+/);
        blocks.push({
          file,
          line: open.start,
          lang,
          fragment: open.fragment || flags.includes('fragment'),
          code: open.body.join('\n'),
        });
        open = null;
      } else {
        open.body.push(text);
      }
      continue;
    }
    const fence = /^\s*(`{3,})(.*)$/.exec(text);
    if (fence) {
      open = {
        fence: fence[1]!,
        info: fence[2]!.trim(),
        start: index + 2,
        body: [],
        fragment: previous.trim() === '<!-- fragment -->',
      };
    } else {
      prose.push({ line: index + 1, text });
    }
    if (text.trim() !== '') previous = text;
  }
  if (open) throw new Error(`${relativeName(file)}: a code fence opened at line ${open.start - 1} is never closed`);
  return { blocks, prose };
}

/** Inline code spans removed, so that `[a](b)` inside backticks is not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[^`]*?\1/g, (span) => ' '.repeat(span.length));
}

export interface Link {
  line: number;
  target: string;
}

/** Every link and image target of the prose: inline `[text](target)`, reference definitions, HTML href/src. */
export function links(parsed: ParsedMarkdown): Link[] {
  const found: Link[] = [];
  for (const { line, text } of parsed.prose) {
    const prose = withoutCodeSpans(text);
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ line, target: match[1]! });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(prose);
    if (definition) found.push({ line, target: definition[1]! });
    for (const match of prose.matchAll(/\b(?:href|src)="([^"]+)"/g)) found.push({ line, target: match[1]! });
  }
  return found;
}

/**
 * The anchors GitHub gives the headings of a markdown file: the heading's text (markup removed),
 * lower-cased, everything but letters, digits, spaces, `-` and `_` dropped, spaces made `-`; a
 * repeated slug gets `-1`, `-2`, ... (as github-slugger does).
 */
export function headingAnchors(parsed: ParsedMarkdown): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of parsed.prose) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!heading) continue;
    const plain = heading[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/[`*]/g, '');
    const base = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}
