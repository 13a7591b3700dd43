import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/** BENCH_CPU_PROFILE: a directory to write each drain's CPU profile to (unset: none is taken). */
const DIRECTORY = process.env.BENCH_CPU_PROFILE ?? '';

/**
 * A CPU profile of this process over one drain only (BENCH_CPU_PROFILE), for Chrome DevTools or
 * speedscope: `node --cpu-prof` covers the whole run, where the seeding of 200,000 jobs and the
 * boot outweigh the drain. Started when the drain's clock starts, written when it stops.
 */
export class DrainCpuProfile {
  private session: Session | undefined;

  async start(): Promise<void> {
    if (!DIRECTORY) return;
    this.session = new Session();
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  /** Writes the profile (`drain-<time>.cpuprofile`) and returns its path, if one was taken. */
  async stop(): Promise<string | undefined> {
    const session = this.session;
    if (!session) return undefined;
    this.session = undefined;
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    const path = join(DIRECTORY, `drain-${Date.now()}.cpuprofile`);
    await writeFile(path, JSON.stringify(profile));
    return path;
  }
}
