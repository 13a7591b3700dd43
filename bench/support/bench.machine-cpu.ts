import { readFileSync } from 'node:fs';

/** The machine's CPU time since the last reading, as % of all cores' time. */
export interface MachineCpu {
  idle: number;
  /** Time the hypervisor gave this machine's CPUs to others: a stall with steal is not ours. */
  steal: number;
}

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
    return { idle: pct(3), steal: pct(7) };
  }
}
