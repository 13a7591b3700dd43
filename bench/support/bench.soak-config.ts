/** Knobs of the sustained-load run (`npm run bench -- --soak`); flags win over the environment. */
export interface SoakConfig {
  /** Jobs enqueued per second, steadily. */
  rate: number;
  /** How long the load runs, in seconds. */
  seconds: number;
  /** retention.completed (and .failed) of the instance, in ms. */
  retentionMs: number;
  /** maintenanceInterval of the instance, in ms. */
  maintenanceMs: number;
  /** One report row per this many ms. */
  reportMs: number;
  /** When a snapshot is taken and held open on the database, in seconds from the start (see holdSeconds). */
  holdAt: number;
  /** How long that snapshot is held, in seconds; 0: none. */
  holdSeconds: number;
  /** 0: no-op handlers that return nothing; else each handler returns an output with a string this long. */
  outputBytes: number;
}

const FLAGS: Record<string, { env: string; key: keyof SoakConfig; fallback: number }> = {
  '--rate': { env: 'BENCH_SOAK_RATE', key: 'rate', fallback: 5_000 },
  '--seconds': { env: 'BENCH_SOAK_SECONDS', key: 'seconds', fallback: 300 },
  '--retention-ms': { env: 'BENCH_SOAK_RETENTION_MS', key: 'retentionMs', fallback: 60_000 },
  '--maintenance-ms': { env: 'BENCH_SOAK_MAINTENANCE_MS', key: 'maintenanceMs', fallback: 30_000 },
  '--report-ms': { env: 'BENCH_SOAK_REPORT_MS', key: 'reportMs', fallback: 60_000 },
  '--hold-at': { env: 'BENCH_SOAK_HOLD_AT', key: 'holdAt', fallback: 120 },
  '--hold-seconds': { env: 'BENCH_SOAK_HOLD_SECONDS', key: 'holdSeconds', fallback: 0 },
  '--output-bytes': { env: 'BENCH_SOAK_OUTPUT_BYTES', key: 'outputBytes', fallback: 0 },
};

function positive(name: string, raw: string): number {
  const n = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** Whether the command line asks for the soak run. */
export const soakRequested = (argv: readonly string[]) => argv.includes('--soak');

/** `--rate 2000` or `--rate=2000`, else BENCH_SOAK_RATE, else the default (see FLAGS). */
export function readSoakConfig(argv: readonly string[]): SoakConfig {
  const config = Object.fromEntries(Object.values(FLAGS).map((f) => [f.key, f.fallback])) as unknown as SoakConfig;
  for (const flag of Object.values(FLAGS)) {
    const raw = process.env[flag.env];
    if (raw !== undefined && raw !== '') config[flag.key] = positive(flag.env, raw);
  }
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i]!.split('=', 2) as [string, string | undefined];
    if (name === '--soak') continue;
    const flag = FLAGS[name];
    if (!flag) throw new Error(`unknown bench flag ${name}; known: --soak, ${Object.keys(FLAGS).join(', ')}`);
    const raw = inline ?? argv[++i];
    if (raw === undefined) throw new Error(`${name} needs a value`);
    config[flag.key] = positive(name, raw);
  }
  return config;
}
