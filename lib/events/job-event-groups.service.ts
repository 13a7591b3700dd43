import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { AWA_OPTIONS } from '../awa.constants.js';
import { JobEventMessages } from '../awa.messages.js';
import { AwaRegistry, type AwaModuleEntry } from '../awa.registry.js';
import { AwaDatabase } from '../database/awa-database.js';
import { ON_JOB_EVENT_METADATA, type OnJobEventMetadata } from '../decorators/on-job-event.decorator.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { jobEventsSql } from '../sql/index.js';
import { JobEventConsumer, type JobEventGroup } from './job-event.consumer.js';
import { checkGroup } from './job-event-groups.check.js';
import { JOB_EVENT_LAG_CAP, type JobEvent, type JobEventGroupState } from './job-event.js';

/** The LIKE pattern of a kind pattern: `*` any run of characters, every other character literal. */
const likePattern = (kind: string) => kind.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%');

/** Which AwaModule an admin call acts on: a module's name, null for the default module; absent: each. */
export interface JobEventGroupTarget {
  module?: string | null;
}

/**
 * The durable job events' groups (docs/durable-events.md): finds every @OnJobEvent method at boot,
 * stores each group's subscriptions (so every instance writes their events), and runs one consumer per
 * group on this instance; only one instance at a time delivers a group. AwaLifecycle orders these
 * steps: the subscriptions are stored before this instance's workers start, so none of its own
 * transitions misses them. Also the groups' admin: their positions and lag, replay, skip and removal.
 * Every AwaModule has one, for the groups of its database: a group's queues of a module are subscribed
 * and delivered in that module's database ('*' in every module's); the admin methods cover every module.
 */
@Injectable()
export class JobEventGroups {
  private readonly found = new Map<string, JobEventGroup>();
  private consumers: JobEventConsumer[] = [];
  /** This instance as the holder of group leases. */
  private readonly holder = randomUUID();

  /** @internal The module builds it. */
  constructor(
    private readonly db: AwaDatabase,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly registry: AwaRegistry,
  ) {}

  /** @internal Finds the @OnJobEvent methods (AwaLifecycle, at init). */
  explore(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const { instance } = wrapper;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance);
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const meta = this.reflector.get<OnJobEventMetadata | undefined>(ON_JOB_EVENT_METADATA, prototype[method]);
        if (meta) this.register(meta, instance as Record<string, (event: JobEvent) => unknown>, method);
      }
    }
  }

  /**
   * @internal Stores the subscriptions, in every mode (so events are written also under AwaTesting). A
   * group declared here with no queue of this module is dropped from its database: a position nobody
   * moves (left by an earlier declaration) would hold back the retention of every event.
   */
  async storeSubscriptions(): Promise<void> {
    const local = this.local();
    for (const group of this.found.keys())
      if (!local.some((g) => g.group === group)) await this.db.query(jobEventsSql.dropGroup, [group]);
    for (const g of local) {
      const rows = g.events.flatMap((event) =>
        g.kinds.flatMap((kind) => g.queues.map((queue) => ({ event, kind, queue }))),
      );
      await this.db.execute(jobEventsSql.storeSubscriptions, [
        g.group,
        rows.map((r) => r.event),
        rows.map((r) => r.kind),
        rows.map((r) => likePattern(r.kind)),
        rows.map((r) => r.queue),
      ]);
    }
  }

  /** @internal Starts a consumer per group (AwaLifecycle, after the workers; not in testing mode). */
  start(): void {
    this.consumers = this.local().map(
      (g) => new JobEventConsumer(this.db, this.options.jobEvents, g, this.holder, this.options.name),
    );
    for (const consumer of this.consumers) consumer.start();
  }

  /** @internal Stops the consumers and gives their leases up (AwaLifecycle, at shutdown). */
  async stop(): Promise<void> {
    const consumers = this.consumers;
    this.consumers = [];
    await Promise.all(consumers.map((c) => c.stop(this.options.shutdownTimeout)));
  }

  /** The groups of this app (those found here), by name. */
  get declared(): readonly string[] {
    return [...this.found.keys()];
  }

  /**
   * Every stored group's position and lag (also groups other apps declare), in every AwaModule's
   * database; `module` names a named module's.
   */
  async groups(): Promise<JobEventGroupState[]> {
    return (await Promise.all(this.modules().map((m) => m.get(JobEventGroups).localGroups()))).flat();
  }

  /** @internal The groups stored in this module's database (telemetry's gauges of this module). */
  async localGroups(): Promise<JobEventGroupState[]> {
    const rows = await this.db.query(jobEventsSql.groupLag, [JOB_EVENT_LAG_CAP]);
    const module = this.options.name === undefined ? {} : { module: this.options.name };
    return rows.map((r) => ({
      group: r.group,
      ...module,
      holder: r.holder,
      leaseUntil: r.lease_until,
      failures: r.failures,
      lastError: r.last_error,
      lagEvents: r.lag_events,
      lagMs: r.lag_ms,
    }));
  }

  /**
   * Moves group `group` back (or on) to its first stored event at or after `from`, so it handles that
   * event and every later one again (events older than the retention are gone). The instance delivering
   * it notices at its next acknowledgement and reads on from there. Without `target.module`, in every
   * module's database that has the group. Returns whether the group exists, and the time of the first
   * event it will see again (null: none stored since `from`).
   */
  async replay(
    group: string,
    from: Date,
    target: JobEventGroupTarget = {},
  ): Promise<{ replayed: boolean; firstEventAt: Date | null }> {
    checkName(group);
    if (!(from instanceof Date) || Number.isNaN(from.getTime()))
      throw new AdminValidationError('from', JobEventMessages.fromInvalid());
    const rows = (
      await Promise.all(
        this.modules(target).map((m) => m.get(JobEventGroups).db.query(jobEventsSql.replayGroup, [group, from])),
      )
    ).flat();
    const firsts = rows.flatMap((r) => (r.first_at ? [r.first_at] : []));
    const firstEventAt = firsts.length ? new Date(Math.min(...firsts.map((d) => d.getTime()))) : null;
    return { replayed: rows.length > 0, firstEventAt };
  }

  /**
   * Moves group `group` past its next event, unhandled: for an event its handler can never take, which
   * otherwise holds the group (see docs/durable-events.md). A group stored in two modules' databases
   * needs `target.module`: the other module's next event is not the stuck one. Returns the skipped
   * event's id, null if the group has no event waiting.
   */
  async skip(group: string, target: JobEventGroupTarget = {}): Promise<string | null> {
    checkName(group);
    let modules = this.modules(target);
    if (modules.length > 1) {
      const stored = await Promise.all(
        modules.map(async (m) => (await m.get(JobEventGroups).db.query(jobEventsSql.groupStored, [group])).length > 0),
      );
      modules = modules.filter((_, i) => stored[i]);
      if (modules.length > 1)
        throw new AdminValidationError(
          'module',
          JobEventMessages.groupInModules(group, modules.map((m) => m.label).sort()),
        );
    }
    const [module] = modules;
    if (!module) return null;
    const [row] = await module.get(JobEventGroups).db.query(jobEventsSql.skipGroupEvent, [group]);
    return row?.skipped_id ?? null;
  }

  /**
   * Forgets group `group`: its position and subscriptions, so its events are no longer written and the
   * retention no longer waits for it; without `target.module`, in every module's database. For a group
   * removed from the code; an instance that still declares it creates it again, at the present, when it
   * boots.
   */
  async drop(group: string, target: JobEventGroupTarget = {}): Promise<boolean> {
    checkName(group);
    const rows = await Promise.all(
      this.modules(target).map((m) => m.get(JobEventGroups).db.query(jobEventsSql.dropGroup, [group])),
    );
    return rows.some((r) => r.length > 0);
  }

  /**
   * The groups this module runs, each with its queues of this module: '*' stays '*' (every module's
   * queues); a named queue goes to the module that declares it, one no module declares to the default
   * module. A group with no queue here is not run here.
   */
  private local(): JobEventGroup[] {
    const here = (queue: string) =>
      queue === '*' || (this.registry.ownerOf(queue) ?? this.registry.named(undefined))?.name === this.options.name;
    return [...this.found.values()].flatMap((g) => {
      const queues = g.queues.filter(here);
      return queues.length === 0 ? [] : [{ ...g, queues }];
    });
  }

  /** The modules an admin call acts on: `target.module`'s (checked), else every module. */
  private modules(target: JobEventGroupTarget = {}): readonly AwaModuleEntry[] {
    const all = this.registry.modules;
    const module: unknown = target?.module;
    if (module === undefined) return all;
    const found = all.find((m) => m.name === (module ?? undefined));
    if (!found || (typeof module !== 'string' && module !== null))
      throw new AdminValidationError(
        'module',
        JobEventMessages.moduleUnknown(
          module,
          all.map((m) => m.label),
        ),
      );
    return [found];
  }

  private register(meta: OnJobEventMetadata, instance: Record<string, (event: JobEvent) => unknown>, method: string) {
    const name = `${instance.constructor.name}.${method}`;
    const group = checkGroup(meta, name);
    const existing = this.found.get(group.group);
    if (existing) throw checkGroup.duplicate(group.group, existing.name, name);
    const fn = instance[method]!;
    this.found.set(group.group, { ...group, name, invoke: (event) => fn.call(instance, event) });
  }
}

function checkName(group: unknown): void {
  if (typeof group !== 'string' || group.length === 0 || group.length > 100)
    throw new AdminValidationError('group', JobEventMessages.groupNameInvalid());
}
