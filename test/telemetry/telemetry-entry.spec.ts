import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as root from 'nestjs-awa';
import * as telemetry from 'nestjs-awa/telemetry';
import { importsInto, inFolder, LIB, libFiles, reachedFrom } from '../support/import-graph.js';

/** Telemetry is a plug-in: its own entry point, and a narrow, read-only view of the core. */
describe('nestjs-awa/telemetry', () => {
  it('exports AwaTelemetryModule, which the root entry no longer exports', () => {
    expect(Object.keys(telemetry)).toEqual(['AwaTelemetryModule']);
    expect(typeof telemetry.AwaTelemetryModule.forRoot).toBe('function');
    expect(Object.keys(root)).not.toContain('AwaTelemetryModule');
  });

  it('the root entry loads nothing of lib/telemetry/, nor @opentelemetry/api', () => {
    const { files, packages } = reachedFrom('index.ts');
    expect(files).toContain('worker/queue-worker.ts'); // the walk does reach the core
    expect([...files].filter(inFolder('telemetry'))).toEqual([]);
    expect([...packages].filter((p) => p.startsWith('@opentelemetry/'))).toEqual([]);
  });

  it('the core imports nothing from lib/telemetry/, not even a type', () => {
    const core = libFiles().filter((file) => !inFolder('telemetry')(file));
    expect(core).toContain('events/awa-events.ts');
    expect(importsInto(core, 'telemetry')).toEqual([]);
  });

  it("sees attempts only through the events' ObservedAttempt: neither telemetry nor the events import lib/worker/", () => {
    const observers = libFiles().filter((file) => inFolder('telemetry')(file) || inFolder('events')(file));
    expect(observers).toEqual(expect.arrayContaining(['telemetry/telemetry.metrics.ts', 'events/awa-events.ts']));
    expect(importsInto(observers, 'worker')).toEqual([]);
  });

  it("keeps its messages in its own folder, out of the core's awa.messages.ts", () => {
    expect(libFiles()).toContain('telemetry/telemetry.messages.ts');
    expect(readFileSync(join(LIB, 'awa.messages.ts'), 'utf8')).not.toMatch(/telemetry|opentelemetry/i);
  });
});
