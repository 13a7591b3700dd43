import { Inject, Injectable } from '@nestjs/common';
import { JobHandler, type Job } from 'nestjs-awa';
import { now } from './bench.progress.js';

/** Injection token of the hooks one app's handlers report to. */
export const BENCH_HOOKS = Symbol('BENCH_HOOKS');

export const BenchKinds = {
  noop: 'bench.noop',
  latency: 'bench.latency',
  hold: 'bench.hold',
  transaction: 'bench.transaction',
  step: 'bench.step',
  io: 'bench.io',
  output: 'bench.output',
} as const;

/** How long a bench.io handler waits, as on a fast service's answer. */
export const IO_WAIT_MS = 1;

/** The rows bench.transaction jobs count in (job i adds 1 to row i % COUNTER_ROWS of public.bench_counter). */
export const COUNTER_ROWS = 64;

/** What the handlers of one app report to, and wait on. One object per app, no globals. */
export class BenchHooks {
  handled = 0;
  started = 0;
  /** When each bench.step job (by its args.i) started: the workflow scenario's chain latencies. */
  readonly stepStarts = new Map<number, number>();
  private wantLatency = -1;
  private onLatency: ((t: number) => void) | undefined;
  private releaseHeld: () => void = () => undefined;
  /** bench.hold handlers wait on this until release(). */
  held: Promise<void> = new Promise((resolve) => (this.releaseHeld = resolve));

  /** Resolves with the time the handler of latency job `i` started. */
  armLatency(i: number): Promise<number> {
    this.wantLatency = i;
    return new Promise((resolve) => (this.onLatency = resolve));
  }

  hitLatency(i: number): void {
    const t = now(); // first thing: this is the handler-start timestamp
    if (i === this.wantLatency && this.onLatency) {
      this.onLatency(t);
      this.onLatency = undefined;
    }
  }

  release(): void {
    this.releaseHeld();
  }
}

/** The bench's job handlers; every one is as cheap as the peers bench's no-op handler. */
@Injectable()
export class BenchHandlers {
  constructor(@Inject(BENCH_HOOKS) private readonly hooks: BenchHooks) {}

  @JobHandler(BenchKinds.noop)
  async noop(): Promise<void> {
    this.hooks.handled++;
  }

  /** A no-op that returns an output (stored with its completion): args.bytes of text beside its index. */
  @JobHandler(BenchKinds.output)
  async output(job: Job<{ i: number; bytes: number }>): Promise<{ i: number; text: string }> {
    this.hooks.handled++;
    return { i: job.args.i, text: 'x'.repeat(job.args.bytes) };
  }

  @JobHandler(BenchKinds.latency)
  async latency(job: Job<{ i: number }>): Promise<void> {
    this.hooks.hitLatency(job.args.i);
  }

  /** A no-op that writes one row with its completion, in job.transaction: the cost of that path. */
  @JobHandler(BenchKinds.transaction)
  async transaction(job: Job<{ i: number }>): Promise<void> {
    await job.transaction((manager) =>
      manager.query('UPDATE public.bench_counter SET n = n + 1 WHERE id = $1', [job.args.i % COUNTER_ROWS]),
    );
    this.hooks.handled++;
  }

  @JobHandler(BenchKinds.io)
  async io(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, IO_WAIT_MS));
    this.hooks.handled++;
  }

  @JobHandler(BenchKinds.step)
  async step(job: Job<{ i: number }>): Promise<void> {
    this.hooks.stepStarts.set(job.args.i, now());
    this.hooks.handled++;
  }

  @JobHandler(BenchKinds.hold)
  async hold(): Promise<void> {
    this.hooks.started++;
    await this.hooks.held;
  }
}
