import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, cleanEnv } from './consumer-project.js';

/** Runs a snippet in a node process of its own, in this repo (so 'nestjs-awa' is the built dist/). */
function node(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: REPO, env: cleanEnv() }, (error, stdout, stderr) => {
      if (error) reject(new Error(`node ${args.join(' ')} failed: ${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}
const esm = (code: string) => node(['--input-type=module', '-e', code]);
const DUAL_WARNING = /\[NESTJS_AWA_DUAL_PACKAGE\] Warning: nestjs-awa: both its esm and commonjs builds were loaded/g;

/**
 * An app loads one build: `import` gets dist/lib, `require` dist/cjs. A process that loads both
 * has two copies of every class (the dual-package hazard); it is told so once, by name.
 */
describe('the ESM and the CommonJS build', () => {
  beforeAll(() => {
    for (const built of ['dist/lib/index.js', 'dist/cjs/lib/index.js']) {
      if (!existsSync(join(REPO, built)))
        throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
    }
  });

  it('warns once, naming the cause, when one process loads both builds', async () => {
    const { stdout, stderr } = await esm(`
      import * as fromImport from 'nestjs-awa';
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const fromRequire = require('nestjs-awa');
      require('nestjs-awa/migrations');
      console.log(fromImport.AwaModule === fromRequire.AwaModule, require.resolve('nestjs-awa'));
    `);
    expect(stdout.trim()).toBe(`false ${join(REPO, 'dist/cjs/lib/index.js')}`);
    expect(stderr.match(DUAL_WARNING)).toHaveLength(1);
  });

  it('does not warn when a process imports the ESM build only', async () => {
    const { stdout, stderr } = await esm(`
      const first = await import('nestjs-awa');
      const migrations = await import('nestjs-awa/migrations');
      console.log(first.AwaMigrations === migrations.AwaMigrations, import.meta.resolve('nestjs-awa'));
    `);
    expect(stdout.trim()).toBe(`true file://${join(REPO, 'dist/lib/index.js')}`);
    expect(stderr).not.toMatch(DUAL_WARNING);
  });

  it(
    'does not warn when a process requires the CommonJS build ' + 'only, even after clearing the require cache',
    async () => {
      const { stdout, stderr } = await node([
        '-e',
        `
      const first = require('nestjs-awa');
      const migrations = require('nestjs-awa/migrations');
      const same = first.AwaMigrations === migrations.AwaMigrations;
      for (const key of Object.keys(require.cache)) if (key.includes('/dist/cjs/')) delete require.cache[key];
      const again = require('nestjs-awa');
      console.log(same, again.AwaModule !== first.AwaModule, require.resolve('nestjs-awa'));
    `,
      ]);
      expect(stdout.trim()).toBe(`true true ${join(REPO, 'dist/cjs/lib/index.js')}`);
      expect(stderr).not.toMatch(DUAL_WARNING);
    },
  );
});
