import { Injectable } from '@nestjs/common';
import type { InFlightJob } from './in-flight-job.js';

/** Every attempt this instance holds a lease for, across its queues. The heartbeat reads it. */
@Injectable()
export class LeaseRegistry {
  private readonly jobs = new Map<string, InFlightJob>();

  add(job: InFlightJob): void {
    this.jobs.set(job.id, job);
  }

  remove(job: InFlightJob): void {
    if (this.jobs.get(job.id) === job) this.jobs.delete(job.id);
  }

  get(id: string): InFlightJob | undefined {
    return this.jobs.get(id);
  }

  get size(): number {
    return this.jobs.size;
  }

  snapshot(): InFlightJob[] {
    return [...this.jobs.values()];
  }
}
