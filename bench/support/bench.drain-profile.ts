import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/** BENCH_CPU_PROFILE: a directory to write each drain's CPU profile to (unset: none is taken). */
const CPU_DIRECTORY = process.env.BENCH_CPU_PROFILE ?? '';
/** BENCH_HEAP_PROFILE: a directory to write each drain's allocation profile to (unset: none is taken). */
const HEAP_DIRECTORY = process.env.BENCH_HEAP_PROFILE ?? '';

/**
 * A CPU profile (BENCH_CPU_PROFILE) and an allocation profile (BENCH_HEAP_PROFILE) of this process
 * over one drain only, for Chrome DevTools or speedscope: `node --cpu-prof` covers the whole run,
 * where the seeding of 200,000 jobs and the boot outweigh the drain. Started when the drain's
 * clock starts, written when it stops. The allocation profile samples every allocation, also those
 * the young generation's collections free at once: where the drain's garbage comes from, not only
 * what outlives it.
 */
export class DrainProfile {
  private session: Session | undefined;

  async start(): Promise<void> {
    if (!CPU_DIRECTORY && !HEAP_DIRECTORY) return;
    this.session = new Session();
    this.session.connect();
    if (CPU_DIRECTORY) {
      await this.session.post('Profiler.enable');
      await this.session.post('Profiler.start');
    }
    if (HEAP_DIRECTORY)
      await this.session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
  }

  /** Writes the profiles (`drain-<time>.cpuprofile`, `.heapprofile`) and returns their paths, if any were taken. */
  async stop(): Promise<string | undefined> {
    const session = this.session;
    if (!session) return undefined;
    this.session = undefined;
    const at = Date.now();
    const paths: string[] = [];
    const save = async (directory: string, extension: string, profile: object) => {
      const path = join(directory, `drain-${at}.${extension}`);
      // Made if missing: a drain of minutes should not fail at its end for want of a directory.
      await mkdir(directory, { recursive: true });
      await writeFile(path, JSON.stringify(profile));
      paths.push(path);
    };
    if (CPU_DIRECTORY) await save(CPU_DIRECTORY, 'cpuprofile', (await session.post('Profiler.stop')).profile);
    if (HEAP_DIRECTORY)
      await save(HEAP_DIRECTORY, 'heapprofile', (await session.post('HeapProfiler.stopSampling')).profile);
    session.disconnect();
    return paths.join(', ');
  }
}
