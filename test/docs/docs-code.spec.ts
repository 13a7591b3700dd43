import { join } from 'node:path';
import { typeCheckBlocks } from './doc-blocks.js';
import { ROOT, docFiles, parseMarkdown, type CodeBlock } from './markdown.js';

const TS = new Set(['ts', 'typescript']);
const FIXTURE = join(ROOT, 'test', 'docs', 'fixtures', 'code.md');

const tsBlocks = (file: string): CodeBlock[] => parseMarkdown(file).blocks.filter((block) => TS.has(block.lang));

describe('documentation code blocks', () => {
  const blocks = docFiles().flatMap(tsBlocks);
  let errors: string[];

  beforeAll(() => {
    // One Program for the pages and the fixture: building it is most of the time.
    errors = typeCheckBlocks([...blocks, ...tsBlocks(FIXTURE)].filter((block) => !block.fragment));
  });

  it('every ts block of README.md and docs/*.md type-checks against the public API (fragments aside)', () => {
    expect(blocks.length).toBeGreaterThan(20);
    expect(errors.filter((error) => !error.startsWith('test/'))).toEqual([]);
  });

  it('keeps fragments few: most blocks stand alone', () => {
    const fragments = blocks.filter((block) => block.fragment).length;
    expect(fragments).toBeLessThanOrEqual(blocks.length / 4);
  });

  it('refuses a misspelt API and an import of lib/ by path, naming their lines (the check itself)', () => {
    // The fixture: a misspelt method, a correct block, a block that imports lib/ by path, a fragment.
    expect(errors.filter((error) => error.startsWith('test/'))).toEqual([
      expect.stringMatching(
        /^test\/docs\/fixtures\/code\.md:7: TS2339 Property 'enqueueLater' does not exist on type 'QueueProducer'/,
      ),
      "test/docs/fixtures/code.md:20: imports '../../../lib/worker/queue-worker.js', which is not a package nor a block of its page",
    ]);
  });
});
