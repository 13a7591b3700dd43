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
 * Enqueues one batch exactly once. An insert that fails may still have committed (the reply was
 * lost with the connection), so before retrying it asks whether the batch landed.
 */
async function enqueueOnce(producer: QueueProducer, sql: Sql, batch: string, items: EnqueueManyItem<ChaosArgs>[]) {
  for (;;) {
    try {
      await producer.enqueueMany(items);
      return;
    } catch {
      const [{ n }] = await untilAnswered(
        () => sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE args->>'batch' = $1`, [batch]),
        'checking a batch',
      );
      if (n === items.length) return;
      if (n !== 0) throw new Error(`chaos producer: batch ${batch} landed partly (${n} of ${items.length})`);
      await sleep(200);
    }
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

/** Enqueues graph `g` exactly once (see enqueueOnce: an ambiguous failure asks whether it landed). */
async function enqueueGraphOnce(producer: QueueProducer, sql: Sql, g: number) {
  const jobs = chaosGraph(g);
  for (;;) {
    try {
      await producer.enqueueGraph(jobs);
      return;
    } catch {
      const [{ n }] = await untilAnswered(
        () => sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE args->>'batch' = $1`, [`g${g}`]),
        'checking a graph',
      );
      if (n === jobs.length) return;
      if (n !== 0) throw new Error(`chaos producer: graph ${g} landed partly (${n} of ${jobs.length})`);
      await sleep(200);
    }
  }
}

/**
 * Enqueues CHAOS_JOBS jobs at CHAOS_RATE jobs/s in batches of CHAOS_BATCH, and a workflow graph after
 * every CHAOS_GRAPH_EVERY batches (see chaosGraph); returns how many plain jobs.
 */
export async function produceAll(producer: QueueProducer, sql: Sql, say: (line: string) => void): Promise<number> {
  const total = Number(process.env[ENV.jobs] ?? 5_000);
  const rate = Number(process.env[ENV.rate] ?? 250);
  const batchSize = Number(process.env[ENV.batch] ?? 25);
  const mix: ChaosMix = process.env[ENV.mix] ? JSON.parse(process.env[ENV.mix]!) : DEFAULT_MIX;
  const graphEvery = Number(process.env[ENV.graphEvery] ?? 1);
  const started = Date.now();
  let seq = 0;
  let graphs = 0;
  for (let b = 0; seq < total; b++) {
    const batch = `b${b}`;
    const items = Array.from({ length: Math.min(batchSize, total - seq) }, (_, i) => chaosJob(seq + i, batch, mix));
    await enqueueOnce(producer, sql, batch, items);
    if (graphEvery > 0 && b % graphEvery === 0) await enqueueGraphOnce(producer, sql, graphs++);
    seq += items.length;
    say(`PRODUCED ${seq}`);
    const due = started + (seq / rate) * 1000;
    if (due > Date.now()) await sleep(due - Date.now());
  }
  return seq;
}
