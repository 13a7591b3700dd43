import { jest } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import type { InFlightJob } from '../../lib/worker/in-flight-job.js';
import { LeaseWriter } from '../../lib/worker/lease-writer.js';

/**
 * Watches the real LeaseWriter's result writes (completeWith, which complete() goes through too:
 * output or snooze): `held` maps `id:attempt` to whether the fenced write found the lease.
 * `restore()` ends the watch.
 */
export function watchResultWrites(app: TestingModule): { held: Map<string, Promise<boolean>>; restore: () => void } {
  const writer = app.get(LeaseWriter);
  const held = new Map<string, Promise<boolean>>();
  const completeWith = writer.completeWith.bind(writer);
  const spy = jest.spyOn(writer, 'completeWith').mockImplementation((job: InFlightJob, done) => {
    const written = new Promise<boolean>((resolve, reject) =>
      completeWith(job, (_job, result, failure) => {
        if (failure) reject(failure.reason);
        else resolve(result!);
        done(job, result, failure);
      }),
    );
    written.catch(() => undefined); // a failed write is the worker's to report; a test reads it only when it awaits
    held.set(`${job.id}:${job.row.attempt}`, written);
  });
  return { held, restore: () => spy.mockRestore() };
}
