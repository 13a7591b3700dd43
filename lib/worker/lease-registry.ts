import { Injectable } from '@nestjs/common';
import type { InFlightJob } from './in-flight-job.js';

/**
 * Every attempt this instance holds a lease for, across its queues, keyed by (id, run_lease).
 * The heartbeat reads it.
 */
@Injectable()
export class LeaseRegistry {
  private readonly jobs = new Map<string, InFlightJob>();

  add(job: InFlightJob): void {
    this.jobs.set(job.key, job);
  }

  remove(job: InFlightJob): void {
    this.jobs.delete(job.key);
  }

  has(job: InFlightJob): boolean {
    return this.jobs.get(job.key) === job;
  }

  /** The attempts of job `id` held here (normally at most one). */
  byJobId(id: string): InFlightJob[] {
    return [...this.jobs.values()].filter((job) => job.id === id);
  }

  get size(): number {
    return this.jobs.size;
  }

  snapshot(): InFlightJob[] {
    return [...this.jobs.values()];
  }
}
