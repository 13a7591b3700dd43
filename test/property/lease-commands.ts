import fc from 'fast-check';

/** Simulated instances (processes); a crash or shutdown replaces one with a new generation. */
export const INSTANCES = 3;

type Rescue = 'stale' | 'deadline' | 'orphan';

/**
 * One step. `inst` picks an instance (for complete, fail and race: one of those that believe they
 * hold something); `pick` picks one of the leases it believes it holds (modulo their count; beliefs
 * include stale ones, so fenced-out completes and fails are tried often).
 */
export type Command =
  | { t: 'enqueue'; maxAttempts: number }
  | { t: 'claim'; inst: number; max: number; deadline: boolean }
  | { t: 'heartbeat'; inst: number }
  | { t: 'complete'; inst: number; pick: number }
  | { t: 'fail'; inst: number; pick: number }
  /** The process dies: its beliefs are gone, its leases stay for the orphan sweep. */
  | { t: 'crash'; inst: number }
  /** Graceful shutdown: every lease it believes it holds is released. */
  | { t: 'shutdown'; inst: number }
  /** Its heartbeats stop landing (a partition): its leases' heartbeat_at is set an hour back. */
  | { t: 'stall'; inst: number }
  /** A stall, then at once the leader's stale-heartbeat rescue: the instance still believes it holds them. */
  | { t: 'partition'; inst: number }
  /** One lease (any instance's) passes its hard deadline. */
  | { t: 'expire'; pick: number }
  | { t: 'rescue'; kind: Rescue }
  /** A late completion races a rescue of the very same lease, on two connections. */
  | { t: 'race'; inst: number; pick: number; kind: Rescue };

const inst = fc.integer({ min: 0, max: INSTANCES - 1 });
const pick = fc.nat({ max: 20 });
const rescueKind = fc.constantFrom<Rescue>('stale', 'deadline', 'orphan');

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({ t: fc.constant('enqueue' as const), maxAttempts: fc.integer({ min: 1, max: 3 }) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      inst,
      max: fc.integer({ min: 1, max: 3 }),
      deadline: fc.boolean(),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ t: fc.constant('heartbeat' as const), inst }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('complete' as const), inst, pick }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('fail' as const), inst, pick }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('crash' as const), inst }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('shutdown' as const), inst }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('stall' as const), inst }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('partition' as const), inst }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('expire' as const), pick }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('rescue' as const), kind: rescueKind }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('race' as const), inst, pick, kind: rescueKind }), weight: 2 },
);

/** Initial jobs (their max_attempts) and 5 to 25 steps (size 'max': long sequences are as likely as short ones). */
export const scenarioArb = fc.record({
  jobs: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 2, maxLength: 5 }),
  steps: fc.array(commandArb, { minLength: 5, maxLength: 25, size: 'max' }),
});
export type Scenario = { jobs: number[]; steps: Command[] };
