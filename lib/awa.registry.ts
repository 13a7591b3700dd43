import { Global, Injectable, Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { AwaMessages } from './awa.messages.js';
import { AwaOptionError } from './errors/awa-option.error.js';
import { AwaSetupError } from './errors/awa-setup.error.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';

/**
 * A class (or an injection token) used as a key: the registry holds each module's services by their
 * class, and imports none of them.
 */
type Token<T> = (abstract new (...args: never[]) => T) | symbol;

/** One AwaModule of the app: its options, its DataSource, and its services by class. */
export class AwaModuleEntry {
  private readonly parts = new Map<unknown, unknown>();

  constructor(
    readonly options: ResolvedAwaOptions,
    readonly dataSource: DataSource,
  ) {}

  /** The module's name; undefined for the default module. */
  get name(): string | undefined {
    return this.options.name;
  }

  /** The module as messages name it. */
  get label(): string {
    return this.options.name === undefined ? '(default)' : JSON.stringify(this.options.name);
  }

  /** @internal The module registers its services here as it is built. */
  add<T>(token: Token<T>, part: T): this {
    this.parts.set(token, part);
    return this;
  }

  get<T>(token: Token<T>): T {
    if (!this.parts.has(token)) throw new Error(`nestjs-awa: module ${this.label} has no ${String(token)}`);
    return this.parts.get(token) as T;
  }
}

/**
 * Every AwaModule of the app (one per DataSource), and which owns each queue. An app holds one
 * registry, whatever number of modules it imports: the routing services (QueueProducer, QueueAdmin)
 * find a queue's module here. Registration refuses a second module of a name, of a DataSource, or
 * of a queue, so that a misconfigured app fails its boot.
 */
@Injectable()
export class AwaRegistry {
  private readonly entries: AwaModuleEntry[] = [];
  private readonly byQueue = new Map<string, AwaModuleEntry>();

  /** @internal Called by each module as Nest builds it. */
  register(entry: AwaModuleEntry): AwaModuleEntry {
    // Nest builds sibling modules in no set order: the messages name the two in label order.
    const both = (other: AwaModuleEntry) => [other.label, entry.label].sort() as [string, string];
    for (const other of this.entries) {
      if (other.name === entry.name) throw new AwaSetupError(AwaMessages.moduleNameTaken(entry.label));
      if (other.dataSource === entry.dataSource) throw new AwaSetupError(AwaMessages.dataSourceShared(...both(other)));
    }
    for (const queue of entry.options.queues.keys()) {
      const other = this.byQueue.get(queue);
      if (other) throw new AwaOptionError(`queues.${queue}`, AwaMessages.queueInTwoModules(...both(other)));
    }
    this.entries.push(entry);
    for (const queue of entry.options.queues.keys()) this.byQueue.set(queue, entry);
    return entry;
  }

  /** The modules, in the order Nest built them. */
  get modules(): readonly AwaModuleEntry[] {
    return this.entries;
  }

  /** The module that declares `queue`, if any. */
  ownerOf(queue: string): AwaModuleEntry | undefined {
    return this.byQueue.get(queue);
  }

  /**
   * The other module a call about `queues`, made on module `self`, is handed to: the module that
   * declares them, or the default module for none (or only queues no module declares); undefined
   * when that is `self`, or the app runs one module. Queues of two modules: `spans` names both.
   */
  handOff(
    queues: readonly unknown[],
    self: string | undefined,
    spans: (first: string, second: string) => Error,
  ): AwaModuleEntry | undefined {
    if (this.entries.length < 2) return undefined;
    const owners = new Set<AwaModuleEntry>();
    for (const queue of queues) {
      const owner = typeof queue === 'string' ? this.byQueue.get(queue) : undefined;
      if (owner) owners.add(owner);
    }
    const [target = this.named(undefined), second] = owners;
    if (target && second) throw spans(target.label, second.label);
    return target && target.name !== self ? target : undefined;
  }

  /** The module of `name` (undefined: the default module), if the app has it. */
  named(name: string | undefined): AwaModuleEntry | undefined {
    return this.entries.find((e) => e.name === name);
  }
}

/** Holds the app's one AwaRegistry; every AwaModule imports it. */
@Global()
@Module({ providers: [AwaRegistry], exports: [AwaRegistry] })
export class AwaRegistryModule {}
