import type { ModuleRef } from '@nestjs/core';
import { QueueAdmin } from '../admin/queue-admin.service.js';
import type { JobState } from '../interfaces/job.interface.js';
import { JobSchedules } from '../schedules/job-schedules.service.js';
import type { DashboardJobFilter } from './dashboard.input.js';

/** What the dashboard calls on QueueAdmin for its actions (QueueAdmin's own API, narrowed). */
export interface QueueAdminPort {
  pauseQueue(name: string): Promise<void>;
  resumeQueue(name: string): Promise<void>;
  retryJob(id: string): Promise<{ outcome: string; state?: JobState }>;
  cancelJob(id: string): Promise<{ outcome: string }>;
  deleteJob(id: string): Promise<{ outcome: string }>;
  retryJobs(filter: DashboardJobFilter): Promise<{ count: number }>;
  cancelJobs(filter: DashboardJobFilter): Promise<{ count: number }>;
  deleteJobs(filter: DashboardJobFilter): Promise<{ deleted: number; cancelled: number }>;
}

/** One periodic job as JobSchedules lists it. */
export interface ScheduleInfo {
  name: string;
  kind: string;
  queue: string;
  cron: string;
  timeZone?: string | null;
  paused: boolean;
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  [more: string]: unknown;
}

/** What the dashboard calls on JobSchedules (periodic jobs). */
export interface JobSchedulesPort {
  listSchedules(): Promise<ScheduleInfo[]>;
  pauseSchedule(name: string): Promise<unknown>;
  resumeSchedule(name: string): Promise<unknown>;
  triggerSchedule(name: string): Promise<unknown>;
}

/** The services behind the dashboard's actions, found in the app when it has them. */
export interface DashboardPorts {
  admin: QueueAdminPort | undefined;
  schedules: JobSchedulesPort | undefined;
}

/** Looks up an optional provider anywhere in the app, without a hard import between the modules. */
export function findProvider<T>(moduleRef: ModuleRef, token: unknown): T | undefined {
  if (token === undefined) return undefined;
  try {
    return moduleRef.get(token as string, { strict: false }) as T;
  } catch {
    return undefined;
  }
}

/** The action services registered in the app. */
export function findPorts(moduleRef: ModuleRef): DashboardPorts {
  return {
    admin: findProvider<QueueAdminPort>(moduleRef, QueueAdmin),
    schedules: findProvider<JobSchedulesPort>(moduleRef, JobSchedules),
  };
}
