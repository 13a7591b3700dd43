import { readFileSync } from 'node:fs';

/** The machine's CPU time since the last reading, as % of all cores' time. */
export interface MachineCpu {
  idle: number;
  /** Time the hypervisor gave this machine's CPUs to others: a stall with steal is not ours. */
  steal: number;
  /**
   * The time all cores spent working (user, nice, system, irq, softirq), in µs: every process's,
   * the database server's and the kernel's for them. Idle, iowait and steal are left out.
   */
  busyUs: number;
}

/** /proc/stat counts in USER_HZ, 100 per second on every Linux (the kernel's ABI, whatever its tick). */
const US_PER_TICK = 10_000;
/** The busy fields of a /proc/stat cpu line: user, nice, system, irq, softirq (guest time is inside user). */
const BUSY_FIELDS = [0, 1, 2, 5, 6];

/** The busy time in µs of a /proc/stat cpu line's ticks (or of a difference of two). */
const busyUsOf = (ticks: number[]): number => BUSY_FIELDS.reduce((sum, i) => sum + (ticks[i] ?? 0), 0) * US_PER_TICK;

/** The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ... */
function readTicks(): number[] | undefined {
  try {
    return readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  } catch {
    return undefined; // not Linux: the soak reports no machine columns
  }
}

/**
 * Reads the machine's CPU split between calls, from /proc/stat. A soak's stall with the machine
 * idle points at the database or the queue; one with steal or no idle time points at the machine.
 */
export class MachineCpuMeter {
  private last = readTicks();

  /** The split since the previous call (or since construction); undefined where /proc/stat is missing. */
  read(): MachineCpu | undefined {
    const now = readTicks();
    const before = this.last;
    this.last = now;
    if (!now || !before) return undefined;
    const delta = now.map((v, i) => v - (before[i] ?? 0));
    const total = delta.reduce((sum, d) => sum + d, 0);
    if (total <= 0) return undefined;
    const pct = (i: number) => Math.round(((delta[i] ?? 0) / total) * 100);
    return { idle: pct(3), steal: pct(7), busyUs: busyUsOf(delta) };
  }
}

/**
 * The machine's busy time, sampled every `intervalMs` while it runs, for a window known only after
 * the fact: the SQL floor (another program) reports its drain's end and rate, not its start.
 */
export class MachineCpuSampler {
  private readonly samples: Array<[atMs: number, busyUs: number]> = [];
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs = 20) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  /**
   * The busy µs between wall-clock times `fromMs` and `toMs` (Date.now()), from the last sample at or
   * before the one and the first at or after the other (the window grows by up to two intervals);
   * undefined off Linux or outside the samples.
   */
  busyUsBetween(fromMs: number, toMs: number): number | undefined {
    const before = this.samples.filter(([at]) => at <= fromMs).at(-1);
    const after = this.samples.find(([at]) => at >= toMs);
    return before && after ? after[1] - before[1] : undefined;
  }

  private sample(): void {
    const ticks = readTicks();
    if (ticks) this.samples.push([Date.now(), busyUsOf(ticks)]);
  }
}
