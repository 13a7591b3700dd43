import type { DependencyFailurePolicy, EnqueueManyItem, GraphJob, QueueProducer } from 'nestjs-awa';
import {
  CHAOS_KEYS,
  CHAOS_KINDS,
  CHAOS_STEP_KINDS,
  type ChaosStepArgs,
  DEFAULT_MIX,
  ENV,
  HANG_MAX_ATTEMPTS,
  type ChaosArgs,
  type ChaosKindName,
  type ChaosMix,
  SECOND_KINDS,
  SECOND_QUEUE,
} from './chaos-config.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** Plain SQL on the producer's pool (pool.query; see ChaosHandlers.record for why not dataSource.query). */
export type Sql = (text: string, values?: unknown[]) => Promise<any[]>;

/** The order in which a job's first random number picks its kind (the rest are quick). */
const MIX_ORDER: Array<keyof ChaosMix> = ['hang', 'slow', 'flaky', 'keyedA', 'keyedB', 'rated', 'counted'];

/** A small deterministic PRNG (mulberry32), so a job's kind and duration follow from its seq. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Handler run time in ms of each kind but hang (which never settles). */
const DURATION: Record<Exclude<ChaosKindName, 'hang'>, [number, number]> = {
  quick: [2, 20],
  flaky: [2, 20],
  slow: [200, 900],
  keyedA: [5, 60],
  keyedB: [5, 60],
  rated: [2, 20],
  counted: [2, 20],
};

export function chaosJob(seq: number, batch: string, mix: ChaosMix): EnqueueManyItem<ChaosArgs> {
  const random = prng(seq + 1);
  const r = random();
  let name: ChaosKindName = 'quick';
  let upTo = 0;
  for (const candidate of MIX_ORDER) {
    upTo += mix[candidate] ?? 0;
    if (r < upTo) {
      name = candidate;
      break;
    }
  }
  const range = name === 'hang' ? null : DURATION[name];
  const ms = range ? range[0] + Math.floor(random() * (range[1] - range[0])) : 0;
  const { kind, queue } = CHAOS_KINDS[name];
  return {
    kind,
    queue,
    args: { seq, batch, ms },
    ...(name === 'hang' ? { maxAttempts: HANG_MAX_ATTEMPTS } : {}),
    ...(queue === 'keyed' ? { concurrencyKey: `key-${Math.floor(random() * CHAOS_KEYS)}` } : {}),
  };
}

/** Retries `read` until it answers (the database may be restarting). */
async function untilAnswered<T>(read: () => Promise<T>, what: string): Promise<T> {
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() > giveUpAt)
        throw new Error(`chaos producer: ${what} kept failing: ${String(error)}`, { cause: error });
      await sleep(200);
    }
  }
}

/**
 * Sends `count` jobs exactly once. A send that fails may still have committed (the reply was lost
 * with the connection), so before retrying it asks (`landed`, a count query on the producer's pool)
 * whether they are there; some but not all of them is a violation.
 */
async function exactlyOnce(
  send: () => Promise<unknown>,
  sql: Sql,
  landed: [text: string, values: unknown[]],
  count: number,
  what: string,
) {
  for (;;) {
    try {
      await send();
      return;
    } catch {
      const [{ n }] = await untilAnswered(() => sql(...landed), `checking ${what}`);
      if (n === count) return;
      if (n !== 0) throw new Error(`chaos producer: ${what} landed partly (${n} of ${count})`);
      await sleep(200);
    }
  }
}

const IN_BATCH = `SELECT count(*)::int AS n FROM awa.all_jobs WHERE args->>'batch' = $1`;

/** Enqueues one batch exactly once (exactlyOnce). */
const enqueueOnce = (producer: QueueProducer, sql: Sql, batch: string, items: EnqueueManyItem<ChaosArgs>[]) =>
  exactlyOnce(() => producer.enqueueMany(items), sql, [IN_BATCH, [batch]], items.length, `batch ${batch}`);

/**
 * Enqueues a batch's jobs one enqueue() each, every one exactly once (by its seq): single jobs of a
 * queue with `handoff` may be handed to an idle worker (docs/handoff.md).
 */
async function enqueueEachOnce(producer: QueueProducer, sql: Sql, batch: string, items: EnqueueManyItem<ChaosArgs>[]) {
  for (const { kind, args, ...options } of items) {
    await exactlyOnce(
      () => producer.enqueue(kind, args, options),
      sql,
      [`${IN_BATCH} AND args->>'seq' = $2`, [batch, String(args.seq)]],
      1,
      `job ${batch}/${args.seq}`,
    );
  }
}

const POLICIES: DependencyFailurePolicy[] = ['cancel', 'fail', 'ignore'];

/**
 * Workflow graph `g`: a, then b and c (default policy), then d (policy by g). Every third graph's b
 * fails its only attempt, so over 9 graphs d meets each policy with a failed dependency.
 */
export function chaosGraph(g: number): GraphJob<ChaosStepArgs>[] {
  const random = prng(1_000_000 + g);
  const batch = `g${g}`;
  const step = (ref: string, failing = false): GraphJob<ChaosStepArgs> => ({
    ref,
    ...(failing ? CHAOS_STEP_KINDS.failing : CHAOS_STEP_KINDS.step),
    args: { graph: g, ref, batch, ms: 2 + Math.floor(random() * 18) },
    ...(failing ? { maxAttempts: 1 } : {}),
  });
  return [
    step('a'),
    { ...step('b', g % 3 === 1), dependsOn: ['a'] },
    { ...step('c'), dependsOn: ['a'] },
    { ...step('d'), dependsOn: ['b', 'c'], onDependencyFailure: POLICIES[Math.floor(g / 3) % 3]! },
  ];
}

/** Enqueues graph `g` exactly once (exactlyOnce). */
async function enqueueGraphOnce(producer: QueueProducer, sql: Sql, g: number) {
  const jobs = chaosGraph(g);
  await exactlyOnce(() => producer.enqueueGraph(jobs), sql, [IN_BATCH, [`g${g}`]], jobs.length, `graph ${g}`);
}

/** One paced load: `total` jobs at `rate` jobs/s, batch `b` named prefix + b, its jobs made by `job`. */
interface Load {
  total: number;
  rate: number;
  prefix: string;
  job: (seq: number, batch: string) => EnqueueManyItem<ChaosArgs>;
  /** After each batch (the workflow graphs). */
  afterBatch?: (b: number) => Promise<void>;
}

/** Enqueues `load` in batches of CHAOS_BATCH, each exactly once; `said` reports the jobs enqueued so far. */
async function paced(producer: QueueProducer, sql: Sql, load: Load, said: (seq: number) => void): Promise<number> {
  const batchSize = Number(process.env[ENV.batch] ?? 25);
  const started = Date.now();
  let seq = 0;
  for (let b = 0; seq < load.total; b++) {
    const batch = `${load.prefix}${b}`;
    const items = Array.from({ length: Math.min(batchSize, load.total - seq) }, (_, i) => load.job(seq + i, batch));
    // Every fourth batch one job at a time: the single enqueues a handoff takes (see CHAOS_AWA_OPTIONS).
    if (b % 4 === 1) await enqueueEachOnce(producer, sql, batch, items);
    else await enqueueOnce(producer, sql, batch, items);
    await load.afterBatch?.(b);
    seq += items.length;
    said(seq);
    const due = started + (seq / load.rate) * 1000;
    if (due > Date.now()) await sleep(due - Date.now());
  }
  return seq;
}

/**
 * Enqueues CHAOS_JOBS jobs at CHAOS_RATE jobs/s in batches of CHAOS_BATCH, and a workflow graph after
 * every CHAOS_GRAPH_EVERY batches (see chaosGraph); returns how many plain jobs.
 */
export async function produceAll(producer: QueueProducer, sql: Sql, say: (line: string) => void): Promise<number> {
  const mix: ChaosMix = process.env[ENV.mix] ? JSON.parse(process.env[ENV.mix]!) : DEFAULT_MIX;
  const graphEvery = Number(process.env[ENV.graphEvery] ?? 1);
  let graphs = 0;
  const load: Load = {
    total: Number(process.env[ENV.jobs] ?? 5_000),
    rate: Number(process.env[ENV.rate] ?? 250),
    prefix: 'b',
    job: (seq, batch) => chaosJob(seq, batch, mix),
    afterBatch: async (b) => {
      if (graphEvery > 0 && b % graphEvery === 0) await enqueueGraphOnce(producer, sql, graphs++);
    },
  };
  return paced(producer, sql, load, (seq) => say(`PRODUCED ${seq}`));
}

/** A job of the second server's load (seq 0.. of its own): 20% slow, 20% counted, the rest quick. */
export function secondJob(seq: number, batch: string): EnqueueManyItem<ChaosArgs> {
  const random = prng(2_000_000 + seq);
  const r = random();
  const name = r < 0.2 ? 'slow' : r < 0.4 ? 'counted' : 'quick';
  const [lo, hi] = DURATION[name];
  return {
    kind: SECOND_KINDS[name],
    queue: SECOND_QUEUE,
    args: { seq, batch, ms: lo + Math.floor(random() * (hi - lo)) },
  };
}

/**
 * Enqueues CHAOS_SECOND_JOBS jobs into the second server at CHAOS_SECOND_RATE jobs/s (QueueProducer
 * routes them by queue); its outage holds this loop up, not produceAll's.
 */
export async function produceSecond(producer: QueueProducer, sql: Sql, say: (line: string) => void): Promise<number> {
  const load: Load = {
    total: Number(process.env[ENV.secondJobs] ?? 0),
    rate: Number(process.env[ENV.secondRate] ?? 20),
    prefix: 's',
    job: secondJob,
  };
  return paced(producer, sql, load, (seq) => say(`SECOND_PRODUCED ${seq}`));
}
