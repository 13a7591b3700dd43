import { jest } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import type { InFlightJob } from '../../lib/worker/in-flight-job.js';
import { LeaseWriter } from '../../lib/worker/lease-writer.js';

/**
 * Watches the real LeaseWriter's result writes (complete: output or snooze): `held` maps
 * `id:attempt` to whether the fenced write found the lease. `restore()` ends the watch.
 */
export function watchResultWrites(app: TestingModule): { held: Map<string, Promise<boolean>>; restore: () => void } {
  const writer = app.get(LeaseWriter);
  const held = new Map<string, Promise<boolean>>();
  const complete = writer.complete.bind(writer);
  const spy = jest.spyOn(writer, 'complete').mockImplementation((job: InFlightJob) => {
    const result = complete(job);
    held.set(`${job.id}:${job.row.attempt}`, result);
    return result;
  });
  return { held, restore: () => spy.mockRestore() };
}
