// The CLI flags of `npm run chaos` (see run-chaos.ts's header).
import type { RateLimitOptions } from 'nestjs-awa';
import { DEFAULT_RATE_LIMIT } from './chaos-config.js';
import type { ChaosConfig } from './chaos-run-types.js';

const FLAGS: Record<string, keyof ChaosConfig> = {
  '--jobs': 'jobs',
  '--rate': 'rate',
  '--workers': 'workers',
  '--down-ms': 'downMs',
  '--freeze-ms': 'freezeMs',
  '--stall-ms': 'stallMs',
  '--snapshot-ms': 'snapshotMs',
  '--slow-ms': 'slowMs',
  '--slow-latency-ms': 'slowLatencyMs',
  '--dead-rows-ms': 'deadRowsEveryMs',
  '--second-jobs': 'secondJobs',
  '--second-down-ms': 'secondDownMs',
};
/** The rated queue's limit, in parts. */
const RATE_FLAGS: Record<string, keyof RateLimitOptions> = { '--rate-limit': 'limit', '--rate-period': 'period' };
/** Flags without a value. */
const SECOND_SERVER_FLAG = '--second-server';

export function parseArgs(argv: string[]): Partial<ChaosConfig> {
  const config: Record<string, number> = {};
  const rateLimit: RateLimitOptions = { ...DEFAULT_RATE_LIMIT };
  const secondServer = argv.includes(SECOND_SERVER_FLAG);
  const valued = argv.filter((arg) => arg !== SECOND_SERVER_FLAG);
  for (let i = 0; i < valued.length; i += 2) {
    const key = FLAGS[valued[i]!];
    const rateKey = RATE_FLAGS[valued[i]!];
    const value = Number(valued[i + 1]);
    if (!(key || rateKey) || !Number.isFinite(value))
      throw new Error(
        `usage: run-chaos [${SECOND_SERVER_FLAG}] [${[...Object.keys(FLAGS), ...Object.keys(RATE_FLAGS)].map((f) => `${f} N`).join('] [')}]`,
      );
    if (rateKey) rateLimit[rateKey] = value;
    else config[key!] = value;
  }
  return { ...(config as Partial<ChaosConfig>), rateLimit, secondServer };
}
