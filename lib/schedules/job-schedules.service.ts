import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS, DEFAULT_QUEUE } from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { ScheduleMessages } from '../awa.messages.js';
import { cronTimeOf, nextFireAfter } from '../cron/cron.js';
import { AwaDatabase } from '../database/awa-database.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { ScheduleNotFoundError } from '../errors/schedule-not-found.error.js';
import type { CheckedSchedule, ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { schedulesSql } from '../sql/index.js';
import type { ScheduleRow, ScheduleSource } from '../sql/schedules.sql.js';
import { checkSchedule, checkScheduleTarget } from './schedule-definition.js';
import { maxAttemptsOf } from './schedule-fire.js';
import { SchedulePruner } from './schedule-prune.js';
import { scheduleJob } from './schedule-tick.js';
import type { ScheduleDefinition, ScheduleRecord } from './schedule.interface.js';

/** A schedule declared in code, checked, in the queue it resolves to. */
export type DeclaredSchedule = CheckedSchedule & { queue: string; source: ScheduleSource };

/**
 * Periodic jobs at run time (BullMQ's job schedulers): create, change, pause, resume, remove, list
 * and run now. At boot it also stores the schedules declared with @Periodic and in the option
 * `schedules`. The maintenance leader enqueues their fires (see ScheduleTickTask).
 */
@Injectable()
export class JobSchedules {
  /** @internal The module builds it. */
  constructor(
    private readonly db: AwaDatabase,
    private readonly explorer: AwaExplorer,
    private readonly prune: SchedulePruner,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /**
   * @internal Stores the declared schedules (see declared()), and prunes those no live instance
   * declares any more. The lifecycle calls it once this instance's row names them, so that the
   * leader's prune never takes a schedule that an instance is declaring.
   */
  async storeDeclared(declared: readonly DeclaredSchedule[]): Promise<void> {
    const now = await this.databaseNow();
    const removed = await this.db.transaction(async (client) => {
      for (const source of ['decorator', 'options'] as const) {
        const rows = declared.filter((d) => d.source === source).map((d) => this.toRow(d, now));
        if (rows.length > 0)
          await AwaDatabase.queryOn(client, schedulesSql.upsertSchedules, [JSON.stringify(rows), source]);
      }
      return AwaDatabase.queryOn(client, schedulesSql.pruneDeclaredSchedules, this.prune.params());
    });
    this.prune.report(removed);
  }

  /** Creates or replaces a runtime schedule. Unchanged cron and time zone keep its next fire. */
  async upsertSchedule<TArgs = unknown>(definition: ScheduleDefinition<TArgs>): Promise<ScheduleRecord<TArgs>> {
    const checked = this.resolve(checkSchedule(definition, 'schedule.', this.options), 'schedule.');
    const row = this.toRow(checked, await this.databaseNow());
    await this.db.query(schedulesSql.upsertSchedules, [JSON.stringify([row]), 'runtime']);
    return (await this.getSchedule<TArgs>(checked.name))!;
  }

  /** Deletes a schedule (of any source; a declared one comes back at the next boot that declares it). */
  async removeSchedule(name: string): Promise<boolean> {
    return (await this.db.query(schedulesSql.deleteSchedule, [checkName(name)])).length > 0;
  }

  /** Stops a schedule's fires until resumeSchedule. Throws ScheduleNotFoundError for an unknown name. */
  async pauseSchedule(name: string): Promise<void> {
    const [row] = await this.db.query(schedulesSql.pauseSchedule, [checkName(name)]);
    if (!row) throw new ScheduleNotFoundError(name);
  }

  /** Resumes a paused schedule at its next fire from now: fires that fell in the pause are not made up. */
  async resumeSchedule(name: string): Promise<void> {
    const schedule = await this.require(name);
    const next = nextFireAfter(cronTimeOf(schedule.cron, schedule.timeZone), (await this.databaseNow()).getTime());
    const [row] = await this.db.query(schedulesSql.resumeSchedule, [name, next === undefined ? null : new Date(next)]);
    if (!row) throw new ScheduleNotFoundError(name);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return (await this.db.query(schedulesSql.listSchedules)).map(toRecord);
  }

  async getSchedule<TArgs = unknown>(name: string): Promise<ScheduleRecord<TArgs> | null> {
    const [row] = await this.db.query(schedulesSql.getSchedule, [checkName(name)]);
    return row ? (toRecord(row) as ScheduleRecord<TArgs>) : null;
  }

  /**
   * Enqueues one job of the schedule now, outside its cron timeline (a "run now"): its next fire
   * stays as it is. Works on a paused schedule too. Throws ScheduleNotFoundError for an unknown name.
   */
  async triggerSchedule(name: string): Promise<{ id: string; kind: string; queue: string }> {
    const schedule = await this.require(name);
    const maxAttempts = maxAttemptsOf(this.options)(schedule.queue);
    const job = scheduleJob(
      { ...schedule, concurrency_key: schedule.concurrencyKey },
      maxAttempts,
      await this.databaseNow(),
      null,
    );
    const [row] = await this.db.query(schedulesSql.insertScheduledJobs, [JSON.stringify([job]), []]);
    return { id: row!.id, kind: schedule.kind, queue: schedule.queue };
  }

  private async require(name: string): Promise<ScheduleRecord> {
    const schedule = await this.getSchedule(name);
    if (!schedule) throw new ScheduleNotFoundError(name);
    return schedule;
  }

  private async databaseNow(): Promise<Date> {
    const [row] = await this.db.query(schedulesSql.databaseNow);
    return row!.now;
  }

  /**
   * The schedule in the queue it resolves to (its own, else its handler's here, else the default),
   * refused if no claim could take its jobs there (checkScheduleTarget).
   */
  private resolve(schedule: CheckedSchedule, prefix: string): CheckedSchedule & { queue: string } {
    const handlerQueue = this.explorer.handlers.get(schedule.kind)?.queue;
    const queue = schedule.queue ?? handlerQueue ?? DEFAULT_QUEUE;
    checkScheduleTarget(schedule, queue, handlerQueue, prefix, this.options);
    return { ...schedule, queue };
  }

  /**
   * @internal The schedules of @Periodic and of the option `schedules`, checked (also against the
   * queue each resolves to, once handlers are known), with distinct names.
   */
  declared(): DeclaredSchedule[] {
    const all: DeclaredSchedule[] = [];
    const where = new Map<string, string>();
    const add = (schedule: CheckedSchedule, at: string, source: ScheduleSource) => {
      const first = where.get(schedule.name);
      if (first) throw new AwaOptionError(`${at}name`, ScheduleMessages.nameDuplicate(schedule.name, first));
      where.set(schedule.name, at.replace(/\.$/, ''));
      all.push({ ...this.resolve(schedule, at), source });
    };
    for (const { handler, kind, queue, periodic } of this.explorer.periodic) {
      const at = `@Periodic(${handler}).`;
      const { name, ...rest } = periodic;
      add(checkSchedule({ ...rest, name: name ?? kind, kind, queue }, at, this.options), at, 'decorator');
    }
    this.options.schedules.forEach((schedule, i) => add(schedule, `schedules[${i}].`, 'options'));
    return all;
  }

  private toRow(schedule: CheckedSchedule & { queue: string }, now: Date): object {
    const next = nextFireAfter(cronTimeOf(schedule.cron, schedule.timeZone), now.getTime());
    return {
      name: schedule.name,
      kind: schedule.kind,
      queue: schedule.queue,
      args: schedule.args,
      cron: schedule.cron,
      time_zone: schedule.timeZone,
      missed: schedule.missed,
      concurrency_key: schedule.concurrencyKey,
      next_fire_at: next === undefined ? null : new Date(next).toISOString(),
    };
  }
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new AwaOptionError('name', 'expected a schedule name');
  return name;
}

function toRecord(row: ScheduleRow): ScheduleRecord {
  return {
    name: row.name,
    kind: row.kind,
    queue: row.queue,
    cron: row.cron,
    timeZone: row.time_zone,
    args: row.args,
    missed: row.missed,
    concurrencyKey: row.concurrency_key,
    paused: row.paused,
    nextFireAt: row.next_fire_at,
    lastFireAt: row.last_fire_at,
    source: row.source,
  };
}
