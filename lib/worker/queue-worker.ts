import { Logger } from '@nestjs/common';
import { AwaMessages, RescueErrors } from '../awa.messages.js';
import type { RegisteredHandler } from '../awa.explorer.js';
import type { AwaDatabase } from '../database/awa-database.js';
import type { AwaEvents } from '../events/awa-events.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { Waiters } from '../util/waiters.js';
import { SlotSet } from '../util/slot-set.js';
import { AttemptResults } from './attempt-results.js';
import { InFlightJob, type AttemptOutcome } from './in-flight-job.js';
import type { LeaseRegistry } from './lease-registry.js';
import type { LeaseWriter } from './lease-writer.js';
import { PrefetchBuffer } from './prefetch-buffer.js';
import type { ClaimConnection } from './claim-connection.js';
import { claimBatch, hasFlowControl } from './queue-claim.js';
import { ClaimCursor } from './claim-cursor.js';
import { cancelUnstarted, giveBackUnstarted } from './unstarted-writes.js';
import { WakeTimer } from './wake-timer.js';
import { DeadlineSweep } from './deadline-sweep.js';
import { WorkerOffer } from './worker-offer.js';
import type { ClaimedJobRow } from '../sql/claim.sql.js';

export interface QueueWorkerDeps {
  db: AwaDatabase;
  leases: LeaseRegistry;
  writer: LeaseWriter;
  events: AwaEvents;
  instanceId: string;
  handlers: ReadonlyMap<string, RegisteredHandler>;
  /** The instance's connection for plain claims (see ClaimConnection); without it, claims use the pool. */
  claims?: ClaimConnection;
  /** False while this instance could look dead to the leader (its session is down): claim nothing. */
  canClaim: () => boolean;
}

/**
 * Runs the jobs of one queue on this instance: claim → buffer → run → record. Claims in batches up
 * to the free concurrency slots plus `prefetch` (claimed jobs wait, leased and heartbeated, in the
 * PrefetchBuffer), runs each handler, and hands the result to the LeaseWriter. Woken by NOTIFY, by a
 * freed slot after a full claim, and by a poll timer as the fallback.
 */
export class QueueWorker {
  private readonly running = new SlotSet<InFlightJob>('runningSlot');
  /** Writes how attempts ended. */
  private readonly results: AttemptResults;
  /** The hard deadlines of this queue's running attempts, on one timer (none without a deadline). */
  private readonly deadlines: DeadlineSweep | undefined;
  /** Claimed, leased, not started yet. */
  private readonly buffer: PrefetchBuffer<InFlightJob>;
  /** Where its plain claims read the claim index from. */
  private readonly cursor = new ClaimCursor();
  /** Results being written, and who waits for none to be left (settleWrites). */
  private writing = 0;
  private readonly writesDone = new Waiters();
  /** Who waits for no handler to be running (drain). */
  private readonly handlersDone = new Waiters();
  private readonly kinds: string[];
  private readonly logger: Logger;
  private claiming = false;
  /** The claim loop in flight, awaited by stopClaiming(): its rows must not outlive shutdown. */
  private claimRun: Promise<void> = Promise.resolve();
  private wanted = false;
  private stopped = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  /** When the claim loop last ran to its end without an error (monotonic clock), for the health check. */
  lastTickAt = performance.now();
  /** Key concurrency: a slot freed here or elsewhere may free a key, so each freed slot claims again. */
  private readonly claimOnFree: boolean;
  /** Wakes the claim when the rate limit or a hold lets the next attempt start. */
  private readonly flowTimer = new WakeTimer(() => this.wake());
  /** Its offer for a handoff (queue option `handoff`), made while it is idle. */
  private readonly offer: WorkerOffer;

  constructor(
    readonly options: ResolvedQueueOptions,
    kinds: string[],
    private readonly deps: QueueWorkerDeps,
  ) {
    this.kinds = [...kinds];
    this.logger = new Logger(`AwaWorker:${options.name}`);
    this.buffer = new PrefetchBuffer<InFlightJob>(options, {
      giveBack: (jobs) => void this.track(giveBackUnstarted(this.deps, jobs, this.logger)),
      dropped: (job) => this.dropped(job),
      pump: () => this.pump(),
    });
    this.claimOnFree = options.keyConcurrency > 0;
    this.results = new AttemptResults(
      deps,
      options,
      this.logger,
      (state, ms) => this.backedOff(state, ms),
      this.writtenFn,
    );
    this.deadlines = options.deadlineDuration > 0 ? new DeadlineSweep(options.deadlineDuration) : undefined;
    this.offer = new WorkerOffer(deps.db, options, this.kinds, deps.instanceId, this.logger);
  }

  start(): void {
    this.stopped = false;
    this.lastTickAt = performance.now();
    this.pollTimer = setInterval(() => {
      this.buffer.expire();
      this.wake();
    }, this.options.pollInterval);
    this.pollTimer.unref();
    this.wake();
  }

  /** Asks for a claim; many calls in a row coalesce into one. */
  wake(): void {
    if (this.stopped) return;
    // The claim would take nothing (claimSize): remember the demand without starting the claim loop.
    if (this.claiming || this.buffer.aboveRefill) {
      this.wanted = true;
      return;
    }
    this.claimRun = this.claimLoop();
  }

  /**
   * Stops claiming. Running handlers go on (see drain()). Waits for a claim still in flight (its
   * rows land in the buffer, never started), then returns the claimed jobs never started.
   */
  async stopClaiming(): Promise<InFlightJob[]> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.flowTimer.cancel();
    await this.offer.withdraw();
    await this.claimRun;
    return this.buffer.drain();
  }

  /**
   * A job an enqueue handed to this worker (its offer was taken): committed as leased to this
   * instance before the notification was sent, so it starts as a claimed one would. One that comes
   * after shutdown began is given back unstarted, as buffered jobs are.
   */
  accept(row: ClaimedJobRow): void {
    this.offer.taken();
    const job = new InFlightJob(row, this.deps.writer);
    this.deps.leases.add(job); // heartbeated from now on, as a claimed job
    if (this.stopped) {
      void this.track(giveBackUnstarted(this.deps, [job], this.logger));
      return;
    }
    // Offered while idle, then filled by claims: another worker runs it now rather than it waiting here.
    if (this.running.size >= this.options.concurrency) {
      void this.track(giveBackUnstarted(this.deps, [job], this.logger, RescueErrors.releasedHandoffBusy));
      return;
    }
    const { events } = this.deps;
    if (events.listening) events.emit({ type: 'claimed', queue: this.options.name, count: 1 });
    this.buffer.add(job);
    this.pump();
    if (this.running.size < this.options.concurrency) this.offer.offer();
  }

  /** Waits up to `timeoutMs` for running handlers; returns the attempts still running then. */
  async drain(timeoutMs: number): Promise<InFlightJob[]> {
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.handlersDone.wait(), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    }
    return this.running.toArray();
  }

  private async claimLoop(): Promise<void> {
    this.claiming = true;
    try {
      do {
        this.wanted = false;
        if (this.stopped || !this.deps.canClaim()) break;
        const pausedFor = this.buffer.claimPause();
        if (pausedFor > 0) {
          this.flowTimer.in(pausedFor);
          break;
        }
        const want = this.buffer.claimSize(this.running.size, this.writing);
        if (want <= 0) {
          this.wanted = true; // remember the demand: claim when slots free up
          break;
        }
        // A rate-limited job's entry wait counts from here: no later than the claim's stamp (t in awa.claim_flow).
        const entryWait = this.buffer.nextEntryWait;
        const sentAt = performance.now();
        const { rows, waitMs } = await claimBatch(
          this.deps.db,
          this.options,
          this.kinds,
          want,
          this.deps.instanceId,
          this.deps.claims,
          this.cursor,
          entryWait,
        );
        this.retryDelay = 0;
        this.lastTickAt = performance.now();
        this.buffer.claimReturned(rows.length, this.lastTickAt - sentAt);
        if (waitMs !== null) this.flowTimer.in(waitMs);
        const { events } = this.deps;
        if (events.listening) events.emit({ type: 'claimed', queue: this.options.name, count: rows.length });
        for (const row of rows) {
          const job = new InFlightJob(row, this.deps.writer, sentAt);
          this.deps.leases.add(job); // heartbeated from now on, running or not
          this.buffer.add(job, entryWait);
        }
        this.pump(); // nothing starts if shutdown began while the claim was in flight
        this.buffer.claimed(rows.length === want);
        // A full batch means more may be waiting: claim again as soon as slots free up.
        if (rows.length === want) this.wanted = true;
        // Nothing more to claim and a slot free: idle, so an enqueue may hand this worker its job.
        else if (this.running.size < this.options.concurrency && this.deps.canClaim()) this.offer.offer();
      } while (this.wanted && !this.stopped && this.running.size < this.options.concurrency);
      this.lastTickAt = performance.now();
    } catch (error) {
      this.logger.warn(AwaMessages.operationFailed('claiming jobs', String(error)));
      this.retryDelay = Math.min(Math.max(this.retryDelay * 2, 100), 5_000);
      setTimeout(() => this.wake(), this.retryDelay).unref();
    } finally {
      this.claiming = false;
    }
  }

  /**
   * Starts buffered jobs while slots are free: concurrency is a hard cap. A slot frees when its
   * handler settles, or, at its deadline, once the attempt's end is written; the result is written
   * (batched) after that, and the lease stays registered, heartbeated, until it is. A job that
   * waited in the buffer gets its lease deadline moved to start + deadline: the wait is not
   * charged. One that waited too long to still have that room is given back instead.
   */
  private pump(): void {
    if (this.stopped) return; // shutdown gives buffered jobs back; none may start now
    this.buffer.expire();
    const { concurrency, deadlineDuration } = this.options;
    let job: InFlightJob | undefined;
    const now = performance.now();
    while (this.running.size < concurrency && (job = this.buffer.take()) !== undefined) {
      job.startedAt = now;
      this.running.add(job);
      if (this.buffer.movesDeadline(job)) this.deps.writer.start(job, deadlineDuration);
      this.attempt(job);
    }
    this.buffer.pumped();
  }

  /** A buffered job was cancelled or lost its lease: it never runs. */
  private dropped(job: InFlightJob): void {
    if (job.lost)
      this.deps.leases.remove(job); // the lease is gone already
    else void this.track(cancelUnstarted(this.deps, job, this.logger));
  }

  /** Counts a write in flight, so settleWrites() waits for it. */
  private async track(write: Promise<void>): Promise<void> {
    this.writing++;
    try {
      await write;
    } finally {
      this.writeDone();
    }
  }

  /** One attempt, from handler start until its result is written: settled() goes on from the handler's end. */
  private attempt(job: InFlightJob): void {
    const handler = this.deps.handlers.get(job.row.kind);
    if (handler) {
      const invoke = this.deps.events.process(job, handler.invoke);
      job.start(invoke, this.deadlines ?? 0, this.lateFn, this.enterFn, this.settledFn);
      return;
    }
    const outcome: AttemptOutcome = this.enter(job)
      ? { kind: 'threw', error: AwaMessages.noHandlerForKind(job.row.kind) }
      : { kind: 'unstarted' };
    void Promise.resolve().then(() => this.settled(outcome, job));
  }

  // One function each for every attempt of the queue: no closures per job on the hot path.
  private readonly enterFn = (job: InFlightJob) => this.enter(job);
  private readonly lateFn = (outcome: AttemptOutcome, job: InFlightJob) => this.results.late(job, outcome);
  private readonly settledFn = (outcome: AttemptOutcome, job: InFlightJob) => this.settled(outcome, job);
  private readonly writtenFn = (job: InFlightJob) => {
    this.deps.leases.remove(job);
    this.writeDone();
  };

  /** The handler settled, or its deadline passed, or shutdown released it, or it was not entered. */
  private settled(outcome: AttemptOutcome, job: InFlightJob): void {
    job.settled = true;
    if (outcome.kind === 'unstarted') return this.notEntered(job);
    // A handler past its deadline may still run: its slot frees once the attempt's end is written.
    this.writing++; // before the slot frees: freeSlot() may claim at once, and must count this result
    if (outcome.kind !== 'deadline') this.freeSlot(job);
    if (outcome.kind === 'returned' && !job.cancelRequested && !this.deps.events.listening)
      return this.results.complete(job);
    void this.finishAttempt(job, outcome);
  }

  private async finishAttempt(job: InFlightJob, outcome: AttemptOutcome): Promise<void> {
    try {
      await this.results.record(job, outcome);
    } finally {
      if (outcome.kind === 'deadline') this.freeSlot(job);
      this.deps.leases.remove(job);
      this.writeDone();
    }
  }

  /** A write ended: settleWrites() may return, and a claim held back by unwritten results may go. */
  private writeDone(): void {
    if (--this.writing === 0) this.writesDone.release();
    if ((this.wanted || this.claimOnFree) && !this.stopped) this.wake();
  }

  /**
   * The attempt starts now, right before its handler is called: nothing between this check and the
   * call yields to the event loop, so no stall can come between them. A rate-limited job past its entry
   * wait (a stall since its claim was sent) is not started: the claim's log counted only that wait.
   */
  private enter(job: InFlightJob): boolean {
    if (this.buffer.lateToEnter(job)) return false;
    const { events } = this.deps;
    if (events.listening) events.emit({ type: 'started', attempt: job.observed });
    return true;
  }

  /** Its handler could not be entered in time (see enter): given back unstarted, its slot free again. */
  private notEntered(job: InFlightJob): void {
    this.running.delete(job);
    if (this.running.size === 0) this.handlersDone.release();
    this.buffer.gaveBackLate([job]);
    this.pump();
  }

  private freeSlot(job: InFlightJob): void {
    this.running.delete(job);
    this.buffer.handlerSettled(performance.now() - job.startedAt);
    this.buffer.slotFreed();
    if (this.running.size === 0) this.handlersDone.release();
    if (!this.stopped) this.pump();
    if (this.wanted || this.claimOnFree) this.wake();
  }

  /** Resolves once every result of a settled handler has been written (or given up on). */
  async settleWrites(): Promise<void> {
    if (this.writing > 0) await this.writesDone.wait();
  }

  /** The handler backed off and its queue (or key) is held now: claim again once it may go. */
  private backedOff(state: JobState | null, retryAfterMs: number): void {
    // A held key says no wait of its own.
    if (state !== null && hasFlowControl(this.options) && !this.stopped) this.flowTimer.in(retryAfterMs);
  }
}
