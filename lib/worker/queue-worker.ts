import { Logger } from '@nestjs/common';
import { AbortReasons, AwaMessages, RescueErrors } from '../awa.messages.js';
import type { RegisteredHandler } from '../awa.explorer.js';
import type { AwaDatabase } from '../database/awa-database.js';
import type { AwaEvents } from '../events/awa-events.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolver.js';
import { describeThrown } from '../util/describe-error.js';
import { Waiters } from '../util/waiters.js';
import { ifHeld, writeAttemptOutcome } from './attempt-outcome.js';
import { InFlightJob, type AttemptOutcome } from './in-flight-job.js';
import type { LeaseRegistry } from './lease-registry.js';
import type { LeaseWriter } from './lease-writer.js';
import { bufferWaitLimit, keepDeadlineWithin, RateClaimAllowance, rateEntryWait } from './prefetch-limits.js';
import { claimBatch, hasFlowControl } from './queue-claim.js';

export interface QueueWorkerDeps {
  db: AwaDatabase;
  leases: LeaseRegistry;
  writer: LeaseWriter;
  events: AwaEvents;
  instanceId: string;
  handlers: ReadonlyMap<string, RegisteredHandler>;
  /** False while this instance could look dead to the leader (its session is down): claim nothing. */
  canClaim: () => boolean;
}

/**
 * Runs the jobs of one queue on this instance: claims in batches up to the free concurrency
 * slots plus `prefetch` (claimed jobs wait, leased and heartbeated, in a local buffer), runs each
 * handler, and hands the result to the LeaseWriter. Woken by NOTIFY, by a freed slot after a full
 * claim, and by a poll timer as the fallback.
 */
export class QueueWorker {
  private readonly running = new Map<string, InFlightJob>();
  /** Claimed, leased, not started yet. */
  private readonly buffer: InFlightJob[] = [];
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
  /** Jobs were given back from the buffer for waiting too long: claim no more than free slots. */
  private bufferStale = false;
  /** How long after its claim was sent a job may start: a rate-limited queue's entry wait, else the buffer's. */
  private readonly waitLimit: number;
  /**
   * A rate-limited queue (with or without prefetch): how many jobs it may claim, and whether jobs of its
   * last claim waited in the buffer (see pump). Its wait limit is rateEntryWait, checked again right
   * before each handler is entered (see enter).
   */
  private readonly rateAllowance: RateClaimAllowance | undefined;
  private rateBuffered = false;
  /** Counts the give-backs of late jobs: a claim whose jobs went back does not grow the allowance. */
  private lateGiveBacks = 0;
  /** A rate-limited queue claims no sooner than this (monotonic ms): see RateClaimAllowance.pause. */
  private claimNotBefore = 0;
  private expiryTimer: NodeJS.Timeout | undefined;
  private readonly keepDeadline: number;
  /** When the claim loop last ran to its end without an error (monotonic clock), for the health check. */
  lastTickAt = performance.now();
  /** Key concurrency: a slot freed here or elsewhere may free a key, so each freed slot claims again. */
  private readonly claimOnFree: boolean;
  /** Wakes the claim when the rate limit or a hold lets the next attempt start. */
  private flowTimer: NodeJS.Timeout | undefined;
  private flowWakeAt = 0;

  constructor(
    readonly options: ResolvedQueueOptions,
    kinds: string[],
    private readonly deps: QueueWorkerDeps,
  ) {
    this.kinds = [...kinds];
    this.logger = new Logger(`AwaWorker:${options.name}`);
    const entryWait = rateEntryWait(options.rateLimit, options.deadlineDuration);
    this.waitLimit = entryWait > 0 ? entryWait : bufferWaitLimit(options.deadlineDuration);
    this.rateAllowance =
      entryWait > 0
        ? new RateClaimAllowance(options.concurrency, options.prefetch, entryWait, options.pollInterval)
        : undefined;
    this.keepDeadline = keepDeadlineWithin(options.deadlineDuration);
    this.claimOnFree = options.keyConcurrency > 0;
  }

  start(): void {
    this.stopped = false;
    this.lastTickAt = performance.now();
    this.pollTimer = setInterval(() => {
      this.expireBuffer();
      this.wake();
    }, this.options.pollInterval);
    this.pollTimer.unref();
    this.wake();
  }

  /** Asks for a claim; many calls in a row coalesce into one. */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
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
    clearTimeout(this.flowTimer);
    clearTimeout(this.expiryTimer);
    await this.claimRun;
    const unstarted = this.buffer.splice(0);
    for (const job of unstarted) job.whileBuffered = undefined;
    return unstarted;
  }

  /** Waits up to `timeoutMs` for running handlers; returns the attempts still running then. */
  async drain(timeoutMs: number): Promise<InFlightJob[]> {
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.handlersDone.wait(), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    }
    return [...this.running.values()];
  }

  private async claimLoop(): Promise<void> {
    this.claiming = true;
    try {
      do {
        this.wanted = false;
        if (this.stopped || !this.deps.canClaim()) break;
        const pausedFor = this.claimNotBefore - performance.now();
        if (pausedFor > 0) {
          this.wakeIn(pausedFor);
          break;
        }
        const { concurrency } = this.options;
        // A rate-limited queue buffers only what starts in time (rateEntryWait), else its limit is spent for nothing.
        const prefetch = this.bufferStale
          ? 0
          : this.options.rateLimit
            ? (this.rateAllowance?.prefetch ?? 0)
            : this.options.prefetch;
        const held = this.running.size + this.buffer.length;
        // Backpressure: each settled handler's unwritten result still holds a lease, so results
        // waiting for the writer count against an allowance of the same size as the slots and
        // buffer. Claims never run ahead of a writer that cannot keep up.
        const want = Math.min(
          concurrency + prefetch - held,
          2 * (concurrency + prefetch) - held - this.writing,
          this.rateAllowance?.claim ?? Infinity,
        );
        if (want <= 0 || this.buffer.length > prefetch / 2) {
          this.wanted = true; // remember the demand: claim when slots free up
          break;
        }
        // A rate-limited job's entry wait counts from here: no later than the claim's stamp (t in awa.claim_flow).
        const sentAt = performance.now();
        const { rows, waitMs } = await claimBatch(this.deps.db, this.options, this.kinds, want, this.deps.instanceId);
        this.retryDelay = 0;
        this.lastTickAt = performance.now();
        if (waitMs !== null) this.wakeIn(waitMs);
        this.deps.events.emit({ type: 'claimed', queue: this.options.name, count: rows.length });
        for (const row of rows) {
          const job = new InFlightJob(row, this.deps.writer, sentAt);
          this.deps.leases.add(job); // heartbeated from now on, running or not
          this.toBuffer(job);
        }
        const lateBefore = this.lateGiveBacks;
        this.pump(); // nothing starts if shutdown began while the claim was in flight
        if (this.rateAllowance && this.buffer.length > 0) this.rateBuffered = true;
        else if (this.rateAllowance && rows.length === want && this.lateGiveBacks === lateBefore)
          this.rateAllowance.allStarted(); // more may start in time
        // A full batch means more may be waiting: claim again as soon as slots free up.
        if (rows.length === want) this.wanted = true;
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

  /** Claims again in `ms` (at least 1), unless a wake-up is due sooner already. */
  private wakeIn(ms: number): void {
    const at = performance.now() + Math.max(1, Math.ceil(ms));
    if (this.flowTimer && this.flowWakeAt <= at) return;
    clearTimeout(this.flowTimer);
    this.flowWakeAt = at;
    this.flowTimer = setTimeout(() => {
      this.flowTimer = undefined;
      this.wake();
    }, at - performance.now()).unref();
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
    this.expireBuffer();
    const { concurrency, deadlineDuration } = this.options;
    let now = performance.now();
    while (this.running.size < concurrency && this.buffer.length > 0) {
      if (this.rateAllowance) {
        // Each start is checked on the clock: the handlers started before it took time. (enter checks
        // again, right before the handler's call; this gives the late ones back in one statement.)
        now = performance.now();
        if (this.tooLate(this.buffer[0]!, now)) {
          this.expireBuffer();
          continue;
        }
      }
      const job = this.buffer.shift()!;
      job.whileBuffered = undefined;
      this.running.set(job.key, job);
      if (deadlineDuration > 0 && now - job.claimedAt > this.keepDeadline)
        this.deps.writer.start(job, deadlineDuration);
      void this.attempt(job);
    }
    if (this.rateAllowance) this.watchRateBuffer();
  }

  /**
   * A rate-limited buffer: an emptied buffer whose jobs all started in time may grow; jobs left in it
   * are given back once their wait is over, not at the next poll, to free their leases (and keys).
   */
  private watchRateBuffer(): void {
    clearTimeout(this.expiryTimer);
    if (this.buffer.length === 0) {
      if (this.rateBuffered) this.rateAllowance!.allStarted();
      this.rateBuffered = false;
      return;
    }
    const dueIn = this.buffer[0]!.claimedAt + this.waitLimit - performance.now();
    this.expiryTimer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(dueIn))).unref();
  }

  private toBuffer(job: InFlightJob): void {
    job.whileBuffered = () => this.leaveBuffer(job);
    this.buffer.push(job);
  }

  /** A buffered job was cancelled or lost its lease: it never runs. */
  private leaveBuffer(job: InFlightJob): void {
    const at = this.buffer.indexOf(job);
    if (at < 0) return;
    this.buffer.splice(at, 1);
    job.whileBuffered = undefined;
    if (job.lost)
      this.deps.leases.remove(job); // the lease is gone already
    else void this.track(this.cancelUnstarted(job));
  }

  private async cancelUnstarted(job: InFlightJob): Promise<void> {
    try {
      const held = await this.deps.writer.cancel(job, RescueErrors.cancelled);
      this.deps.events.emit({
        type: 'ended',
        attempt: job.observed,
        outcome: undefined,
        state: ifHeld(held, 'cancelled'),
      });
    } catch (error) {
      // Not lost: the lease stays stored with its cancel request, and its rescue ends it cancelled.
      this.logger.error(AwaMessages.operationFailed(`cancelling job ${job.id}`, String(error)));
    } finally {
      this.deps.leases.remove(job);
    }
  }

  /**
   * Gives back, unstarted and without spending an attempt, the buffered jobs that waited longer
   * than the wait limit (the oldest are first). Until a slot frees, claims then take no more than
   * the free slots, so hung slots do not claim the same jobs again and again.
   */
  private expireBuffer(): void {
    if (this.stopped || this.buffer.length === 0) return;
    const now = performance.now();
    let expired = 0;
    while (expired < this.buffer.length && now - this.buffer[expired]!.claimedAt > this.waitLimit) expired++;
    if (expired === 0) return;
    const jobs = this.buffer.splice(0, expired);
    for (const job of jobs) job.whileBuffered = undefined;
    this.giveBackLate(jobs);
  }

  /** A rate-limited job may start no later than its entry wait after its claim was sent. */
  private tooLate(job: InFlightJob, now: number): boolean {
    return now - job.claimedAt > this.waitLimit;
  }

  /** Gives back jobs that waited past the wait limit; spends the buffer allowance (see expireBuffer). */
  private giveBackLate(jobs: InFlightJob[]): void {
    this.bufferStale = true;
    this.lateGiveBacks++;
    if (this.rateAllowance) {
      this.rateAllowance.gaveBack();
      this.rateBuffered = false;
      this.claimNotBefore = performance.now() + this.rateAllowance.pause;
    }
    void this.track(this.giveBack(jobs));
  }

  private async giveBack(jobs: InFlightJob[]): Promise<void> {
    try {
      await this.deps.writer.release(jobs, RescueErrors.releasedUnstarted, false);
    } catch (error) {
      // Not lost: the leases stay, stop being heartbeated, and maintenance rescues them.
      this.logger.error(AwaMessages.operationFailed('giving back buffered jobs', String(error)));
    } finally {
      for (const job of jobs) this.deps.leases.remove(job);
    }
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

  /** One attempt, from handler start until its result is written. */
  private async attempt(job: InFlightJob): Promise<void> {
    const outcome = await this.runHandler(job);
    if (outcome.kind === 'unstarted') return this.notEntered(job);
    // A handler past its deadline may still run: its slot frees once the attempt's end is written.
    this.writing++; // before the slot frees: freeSlot() may claim at once, and must count this result
    if (outcome.kind !== 'deadline') this.freeSlot(job);
    try {
      await this.record(job, outcome);
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
    if (this.rateAllowance && this.tooLate(job, performance.now())) return false;
    this.deps.events.emit({ type: 'started', attempt: job.observed });
    return true;
  }

  /** Its handler could not be entered in time (see enter): given back unstarted, its slot free again. */
  private notEntered(job: InFlightJob): void {
    this.running.delete(job.key);
    if (this.running.size === 0) this.handlersDone.release();
    this.giveBackLate([job]);
    this.pump();
  }

  private freeSlot(job: InFlightJob): void {
    this.running.delete(job.key);
    this.bufferStale = false;
    if (this.running.size === 0) this.handlersDone.release();
    if (!this.stopped) this.pump();
    if (this.wanted || this.claimOnFree) this.wake();
  }

  /** Resolves once every result of a settled handler has been written (or given up on). */
  async settleWrites(): Promise<void> {
    if (this.writing > 0) await this.writesDone.wait();
  }

  private async runHandler(inFlight: InFlightJob): Promise<AttemptOutcome> {
    const handler = this.deps.handlers.get(inFlight.row.kind);
    const enter = () => this.enter(inFlight);
    const outcome: AttemptOutcome = handler
      ? await inFlight.run(
          this.deps.events.process(inFlight.observed, handler.invoke),
          this.options.deadlineDuration,
          (late) => this.onLate(inFlight, late),
          enter,
        )
      : enter()
        ? { kind: 'threw', error: AwaMessages.noHandlerForKind(inFlight.row.kind) }
        : { kind: 'unstarted' };
    inFlight.settled = true;
    return outcome;
  }

  private async record(inFlight: InFlightJob, outcome: AttemptOutcome): Promise<void> {
    const { row } = inFlight;
    // released: shutdown gave the job back already; unstarted: attempt() gave it back (notEntered)
    if (outcome.kind === 'released' || outcome.kind === 'unstarted') return;
    try {
      const state = await writeAttemptOutcome(this.deps, this.options, inFlight, outcome);
      if (outcome.kind === 'rateLimited') this.backedOff(state, outcome.retryAfterMs);
      if (state === null) {
        this.logger.warn(AwaMessages.leaseLost(row.id, row.kind, row.run_lease));
        inFlight.abort(AbortReasons.leaseLost);
      } else if (outcome.kind === 'threw') {
        this.logger.warn(AwaMessages.handlerThrew(row.id, row.kind, row.attempt, describeThrown(outcome.error)));
      }
    } catch (error) {
      // The result could not be written within heartbeatStaleAfter: once this attempt stops being
      // heartbeated (it is removed from the registry now), maintenance rescues and reruns it.
      this.logger.error(AwaMessages.operationFailed(`writing the result of job ${row.id}`, String(error)));
    }
  }

  /** The handler backed off and its queue (or key) is held now: claim again once it may go. */
  private backedOff(state: JobState | null, retryAfterMs: number): void {
    // A held key says no wait of its own.
    if (state !== null && hasFlowControl(this.options) && !this.stopped) this.wakeIn(retryAfterMs);
  }

  private onLate(inFlight: InFlightJob, outcome: AttemptOutcome): void {
    this.logger.warn(
      `job ${inFlight.id} (${inFlight.row.kind}) settled (${outcome.kind}) ` +
        `after its hard deadline; the result was ignored`,
    );
  }
}
