import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as root from 'nestjs-awa';
import * as testing from 'nestjs-awa/testing';
import { importsInto, inFolder, LIB, libFiles, reachedFrom } from '../support/import-graph.js';

/** The test helpers are a plug-in: their own entry point, messages and SQL; the core never imports them. */
describe('nestjs-awa/testing', () => {
  it('exports AwaTestingModule, AwaTesting and AwaAssertionError; the root entry exports none of the helpers', () => {
    expect(Object.keys(testing).sort()).toEqual(['AwaAssertionError', 'AwaTesting', 'AwaTestingModule']);
    expect(Object.keys(root)).not.toContain('AwaTesting');
    expect(Object.keys(root)).not.toContain('AwaTestingModule');
  });

  it('the core imports nothing from lib/testing/, not even a type', () => {
    const core = libFiles().filter((file) => !inFolder('testing')(file));
    expect(core).toContain('awa.module.ts');
    expect(importsInto(core, 'testing')).toEqual([]);
  });

  it('the root entry loads nothing of lib/testing/', () => {
    const { files } = reachedFrom('index.ts');
    expect(files).toContain('awa.module.ts'); // the walk does reach the core
    expect([...files].filter(inFolder('testing'))).toEqual([]);
  });

  it("keeps its messages in its own folder, out of the core's awa.messages.ts", () => {
    expect(libFiles()).toContain('testing/testing.messages.ts');
    expect(readFileSync(join(LIB, 'awa.messages.ts'), 'utf8')).not.toMatch(/AwaTesting|nestjs-awa\/testing/);
  });

  it("keeps its SQL in its own folder, out of the core's lib/sql/", () => {
    expect(libFiles()).toContain('testing/testing.sql.ts');
    expect(existsSync(join(LIB, 'sql/testing.sql.ts'))).toBe(false);
    expect(readFileSync(join(LIB, 'sql/index.ts'), 'utf8')).not.toMatch(/testing/);
  });
});
