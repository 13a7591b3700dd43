import { Injectable } from '@nestjs/common';
import type { InFlightJob } from './in-flight-job.js';
import { SlotSet } from '../util/slot-set.js';

/**
 * Every attempt this instance holds a lease for, across its queues. Each attempt has its own
 * (id, run_lease), so the attempts themselves are the keys: no key string per job. The heartbeat reads it.
 * A SlotSet, not a Set: a Set's stale hash tables kept every attempt alive past its end (see SlotSet).
 */
@Injectable()
export class LeaseRegistry {
  private readonly jobs = new SlotSet<InFlightJob>('leaseSlot');

  add(job: InFlightJob): void {
    this.jobs.add(job);
  }

  remove(job: InFlightJob): void {
    this.jobs.delete(job);
  }

  has(job: InFlightJob): boolean {
    return this.jobs.has(job);
  }

  /** The attempts of job `id` held here (normally at most one). */
  byJobId(id: string): InFlightJob[] {
    return this.jobs.toArray().filter((job) => job.id === id);
  }

  get size(): number {
    return this.jobs.size;
  }

  snapshot(): InFlightJob[] {
    return this.jobs.toArray();
  }
}
