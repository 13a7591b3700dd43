import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { AWA_OPTIONS } from '../awa.constants.js';
import { JobEventMessages } from '../awa.messages.js';
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

/**
 * The durable job events' groups (docs/durable-events.md): finds every @OnJobEvent method at boot,
 * stores each group's subscriptions (so every instance writes their events), and runs one consumer per
 * group on this instance; only one instance at a time delivers a group. AwaLifecycle orders these
 * steps: the subscriptions are stored before this instance's workers start, so none of its own
 * transitions misses them. Also the groups' admin: their positions and lag, replay, skip and removal.
 * Only the default (unnamed) AwaModule runs groups.
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
  ) {}

  /** @internal Finds the @OnJobEvent methods (AwaLifecycle, at init). */
  explore(): void {
    if (this.options.name !== undefined) return;
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

  /** @internal Stores the subscriptions, in every mode (so events are written also under AwaTesting). */
  async storeSubscriptions(): Promise<void> {
    for (const g of this.found.values()) {
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
    this.consumers = [...this.found.values()].map(
      (g) => new JobEventConsumer(this.db, this.options.jobEvents, g, this.holder),
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

  /** Every stored group's position and lag (also groups other apps declare). */
  async groups(): Promise<JobEventGroupState[]> {
    const rows = await this.db.query(jobEventsSql.groupLag, [JOB_EVENT_LAG_CAP]);
    return rows.map((r) => ({
      group: r.group,
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
   * it notices at its next acknowledgement and reads on from there. Returns whether the group exists, and
   * the time of the first event it will see again (null: none stored since `from`).
   */
  async replay(group: string, from: Date): Promise<{ replayed: boolean; firstEventAt: Date | null }> {
    checkName(group);
    if (!(from instanceof Date) || Number.isNaN(from.getTime()))
      throw new AdminValidationError('from', JobEventMessages.fromInvalid());
    const [row] = await this.db.query(jobEventsSql.replayGroup, [group, from]);
    return { replayed: row !== undefined, firstEventAt: row?.first_at ?? null };
  }

  /**
   * Moves group `group` past its next event, unhandled: for an event its handler can never take, which
   * otherwise holds the group (see docs/durable-events.md). Returns the skipped event's id, null if the
   * group has no event waiting.
   */
  async skip(group: string): Promise<string | null> {
    checkName(group);
    const [row] = await this.db.query(jobEventsSql.skipGroupEvent, [group]);
    return row?.skipped_id ?? null;
  }

  /**
   * Forgets group `group`: its position and subscriptions, so its events are no longer written and the
   * retention no longer waits for it. For a group removed from the code; an instance that still declares
   * it creates it again, at the present, when it boots.
   */
  async drop(group: string): Promise<boolean> {
    checkName(group);
    const [row] = await this.db.query(jobEventsSql.dropGroup, [group]);
    return row !== undefined;
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
