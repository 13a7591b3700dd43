import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as root from 'nestjs-awa';
import * as dashboard from 'nestjs-awa/dashboard';
import { importsInto, inFolder, LIB, libFiles, reachedFrom } from '../support/import-graph.js';

/** The dashboard is a plug-in: its own entry point, messages and SQL; the core never imports it. */
describe('nestjs-awa/dashboard', () => {
  it('exports AwaDashboardModule, which the root entry no longer exports', () => {
    expect(Object.keys(dashboard)).toEqual(['AwaDashboardModule']);
    expect(typeof dashboard.AwaDashboardModule.forRoot).toBe('function');
    expect(Object.keys(root)).not.toContain('AwaDashboardModule');
  });

  it('the root entry loads nothing of lib/dashboard/', () => {
    const { files } = reachedFrom('index.ts');
    expect(files).toContain('admin/queue-admin.service.ts'); // the walk does reach the core
    expect([...files].filter(inFolder('dashboard'))).toEqual([]);
  });

  it('the core imports nothing from lib/dashboard/, not even a type', () => {
    const core = libFiles().filter((file) => !inFolder('dashboard')(file));
    expect(core).toContain('index.ts');
    expect(importsInto(core, 'dashboard')).toEqual([]);
  });

  it('sees the core through its public services and its own SQL: it imports nothing of lib/worker/ or lib/maintenance/', () => {
    const own = libFiles().filter(inFolder('dashboard'));
    expect(own).toEqual(expect.arrayContaining(['dashboard/dashboard.service.ts', 'dashboard/dashboard.sql.ts']));
    expect([...importsInto(own, 'worker'), ...importsInto(own, 'maintenance')]).toEqual([]);
  });

  it("keeps its messages in its own folder, out of the core's awa.messages.ts", () => {
    expect(libFiles()).toContain('dashboard/dashboard.messages.ts');
    expect(readFileSync(join(LIB, 'awa.messages.ts'), 'utf8')).not.toMatch(/dashboard/i);
  });

  it("keeps its SQL in its own folder, out of the core's lib/sql/", () => {
    expect(libFiles()).toContain('dashboard/dashboard.sql.ts');
    expect(readFileSync(join(LIB, 'sql/index.ts'), 'utf8')).not.toMatch(/dashboard/i);
  });
});
