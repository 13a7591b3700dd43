import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { AWA_OPTIONS, JOB_HANDLER_METADATA } from './awa.constants.js';
import { AwaMessages, ScheduleMessages } from './awa.messages.js';
import { AwaRegistry } from './awa.registry.js';
import type { JobHandlerMetadata } from './decorators/job-handler.decorator.js';
import { PERIODIC_METADATA, type PeriodicMetadata } from './decorators/periodic.decorator.js';
import { HandlerRegistrationError } from './errors/handler-registration.error.js';
import type { Job } from './interfaces/job.interface.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';

export interface RegisteredHandler {
  kind: string;
  queue: string;
  /** `Class.method`, for messages. */
  name: string;
  invoke: (job: Job) => unknown;
}

/** A @Periodic found on a handler method. */
export interface DeclaredPeriodic {
  /** `Class.method` of the handler. */
  handler: string;
  kind: string;
  queue: string;
  periodic: PeriodicMetadata;
}

/**
 * Finds every @JobHandler method on the app's providers and controllers, at boot. It keeps those of
 * its module's queues; a handler of a queue another AwaModule declares is that module's.
 */
@Injectable()
export class AwaExplorer {
  private readonly byKind = new Map<string, RegisteredHandler>();
  /** Every handler of the app, whichever module runs it: the queue a job of its kind goes to by default. */
  private readonly everyKind = new Map<string, { queue: string; name: string }>();
  /** Every @Periodic of the handlers, in discovery order. */
  readonly periodic: DeclaredPeriodic[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly registry: AwaRegistry,
  ) {}

  explore(): void {
    this.byKind.clear();
    this.everyKind.clear();
    this.periodic.length = 0;
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) {
      const { instance } = wrapper;
      // Request-scoped and not-yet-resolved providers have no single instance to bind a handler to.
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance);
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const meta = this.reflector.get<JobHandlerMetadata | undefined>(JOB_HANDLER_METADATA, prototype[method]);
        const ours = meta ? this.register(meta, instance as Record<string, (job: Job) => unknown>, method) : false;
        if (ours || !meta) this.collectPeriodic(meta, prototype[method], `${instance.constructor.name}.${method}`);
      }
    }
  }

  get handlers(): ReadonlyMap<string, RegisteredHandler> {
    return this.byKind;
  }

  /** The queue of the app's handler for `kind` (in this module or another), if it has one. */
  handlerQueue(kind: string): string | undefined {
    return this.everyKind.get(kind)?.queue;
  }

  /** Kinds handled here, by queue. */
  kindsByQueue(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const h of this.byKind.values()) out.set(h.queue, [...(out.get(h.queue) ?? []), h.kind]);
    return out;
  }

  private collectPeriodic(meta: JobHandlerMetadata | undefined, method: object, handler: string): void {
    const list = this.reflector.get<PeriodicMetadata[] | undefined>(PERIODIC_METADATA, method as never);
    if (!list) return;
    if (!meta) throw new HandlerRegistrationError(handler, ScheduleMessages.periodicWithoutHandler(handler));
    for (const periodic of list) this.periodic.push({ handler, kind: meta.kind, queue: meta.queue, periodic });
  }

  /** Registers a handler of this module's queues; false for one of another module's. */
  private register(meta: JobHandlerMetadata, instance: Record<string, (job: Job) => unknown>, method: string): boolean {
    const name = `${instance.constructor.name}.${method}`;
    if (typeof meta.kind !== 'string' || meta.kind.trim() === '' || meta.kind.length > 200) {
      throw new HandlerRegistrationError(name, AwaMessages.handlerKindInvalid(name));
    }
    const existing = this.everyKind.get(meta.kind);
    if (existing)
      throw new HandlerRegistrationError(name, AwaMessages.duplicateHandler(meta.kind, existing.name, name));
    this.everyKind.set(meta.kind, { queue: meta.queue, name });
    if (!this.options.queues.has(meta.queue)) {
      if (this.registry.ownerOf(meta.queue)) return false;
      throw new HandlerRegistrationError(name, AwaMessages.handlerQueueUnknown(name, meta.queue));
    }
    const fn = instance[method]!;
    this.byKind.set(meta.kind, { kind: meta.kind, queue: meta.queue, name, invoke: (job) => fn.call(instance, job) });
    return true;
  }
}
