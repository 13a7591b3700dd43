import { RescueErrors } from 'nestjs-awa';
import { claimSql, jobsSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import type { RescueParams, RescuedRow } from '../../lib/sql/maintenance.sql.js';
import { INSTANCES, type Command } from './lease-commands.js';
import { STALE_AFTER_MS, type JobRow, type LeaseRow, type PropertyDb, type Snapshot } from './property-db.js';
import { insertJobsRows } from '../support/job-factory.js';

const QUEUE = 'q';
const KIND = 'k';
const FINAL = new Set(['completed', 'failed', 'cancelled']);
/** Rescue parameters $1..$6: the queue retries at once (base and cap 0), so retries are due at once. */
const RESCUE_PARAMS: RescueParams = [[QUEUE], [0], [0], 0, 0, 100];

interface Belief {
  job: string;
  lease: number;
}

const key = (job: string, lease: number) => `${job}:${lease}`;
const isLive = (snap: Snapshot, b: Belief) => snap.leases.some((l) => l.job_id === b.job && l.run_lease === b.lease);
const sameRow = (a: JobRow | undefined, b: JobRow | undefined) => JSON.stringify(a) === JSON.stringify(b);

class Violation extends Error {}

/** What the scenarios exercised, summed over runs: the spec checks the interesting paths were hit. */
export interface MachineStats {
  claimed: number;
  completed: number;
  /** complete or fail by a holder whose lease was gone: fenced out. */
  staleFinishes: number;
  rescued: number;
  released: number;
  /** Races on a live lease (one side must win). */
  liveRaces: number;
}

export const newStats = (): MachineStats => ({
  claimed: 0,
  completed: 0,
  staleFinishes: 0,
  rescued: 0,
  released: 0,
  liveRaces: 0,
});

/**
 * Drives the real SQL of lib/sql through one scenario, with a model of what each simulated instance
 * believes it holds, and checks after every step that the database and the model agree with the
 * lease invariants. Each step also checks its own expected effect exactly.
 */
export class LeaseMachine {
  private readonly generation = Array.from({ length: INSTANCES }, () => 0);
  private readonly beliefs: Belief[][] = Array.from({ length: INSTANCES }, () => []);
  /** Instances that crashed: their leases are for the orphan sweep. */
  private readonly dead = new Set<string>();
  private readonly completions = new Map<string, number>();
  /** Claims of each job so far (its run lease grows with each, but not by one: see NEXT_RUN_LEASE). */
  private readonly claims = new Map<string, number>();
  private readonly releases = new Map<string, number>();
  private before!: Snapshot;
  private step = -1;
  private command: Command | undefined;

  constructor(
    private readonly db: PropertyDb,
    private readonly stats: MachineStats = newStats(),
  ) {}

  async start(maxAttempts: number[]): Promise<void> {
    await this.db.reset();
    for (const m of maxAttempts) await this.enqueue(m);
    this.before = await this.db.snapshot();
    this.checkGlobal(this.before);
  }

  async apply(command: Command): Promise<void> {
    this.step++;
    this.command = command;
    await this.run(command);
    const after = await this.db.snapshot();
    this.checkTransition(this.before, after, command);
    this.checkGlobal(after);
    this.before = after;
  }

  private id(i: number): string {
    return `instance-${i}-g${this.generation[i]}`;
  }

  private fail(message: string): never {
    throw new Violation(`step ${this.step} ${JSON.stringify(this.command)}: ${message}`);
  }

  private expect(condition: boolean, message: () => string): void {
    if (!condition) this.fail(message());
  }

  private async run(c: Command): Promise<void> {
    switch (c.t) {
      case 'enqueue':
        return void (await this.enqueue(c.maxAttempts));
      case 'claim':
        return this.claim(c.inst, c.max, c.deadline);
      case 'heartbeat':
        return this.heartbeat(c.inst);
      case 'complete':
        return this.finish(c.inst, c.pick, 'complete');
      case 'fail':
        return this.finish(c.inst, c.pick, 'fail');
      case 'crash':
        this.dead.add(this.id(c.inst));
        return this.replace(c.inst);
      case 'shutdown':
        return this.shutdown(c.inst);
      case 'stall':
        return this.stall(c.inst);
      case 'partition':
        await this.stall(c.inst);
        this.before = await this.db.snapshot(); // the stall changed no job; the rescue sees it
        return this.rescue('stale', [...this.dead]);
      case 'expire': {
        const lease = this.before.leases[c.pick % Math.max(1, this.before.leases.length)];
        if (lease) await this.expireLease(lease.job_id, lease.run_lease);
        return;
      }
      case 'rescue':
        return this.rescue(c.kind, [...this.dead]);
      case 'race':
        return this.race(c.inst, c.pick, c.kind);
    }
  }

  private async stall(inst: number): Promise<void> {
    await this.db.sql(
      `UPDATE awa.active_leases SET heartbeat_at = now() - interval '1 hour', ` +
        `claimed_at = now() - interval '1 hour' WHERE instance_id = $1`,
      [this.id(inst)],
    );
  }

  /** The `n`th (modulo) instance among those that believe they hold a lease, or undefined. */
  private holder(n: number): number | undefined {
    const holders = this.beliefs.map((b, i) => (b.length > 0 ? i : -1)).filter((i) => i >= 0);
    return holders.length === 0 ? undefined : holders[n % holders.length];
  }

  private async enqueue(maxAttempts: number): Promise<string> {
    const [row] = await this.db.run(jobsSql.insertJobs, [
      insertJobsRows([{ kind: KIND, queue: QUEUE, args: {}, priority: 0, max_attempts: maxAttempts, run_at: null }]),
    ]);
    return row!.id;
  }

  /** Claims exactly min(max, claimable) jobs, each a claimable one, with a greater run_lease and attempt + 1. */
  private async claim(inst: number, max: number, deadline: boolean): Promise<void> {
    const claimable = [...this.before.jobs.values()].filter(
      (j) => j.state === 'available' || (j.state === 'retryable' && j.due),
    );
    const rows = await this.db.run(claimSql.claimJobs, [
      QUEUE,
      [KIND],
      max,
      this.id(inst),
      deadline ? 600_000 : 0,
      ...claimSql.fromIndexStart([KIND]),
    ]);
    this.expect(
      rows.length === Math.min(max, claimable.length),
      () => `claimed ${rows.length} of ${claimable.length} claimable jobs with max ${max}`,
    );
    for (const row of rows) {
      const was = this.before.jobs.get(row.id);
      this.expect(
        claimable.some((j) => j.id === row.id),
        () => `claimed job ${row.id}, which was ${was?.state}`,
      );
      this.expect(
        Number(row.run_lease) > was!.run_lease && row.attempt === was!.attempt + 1,
        () =>
          `claim of ${row.id} gave lease ${row.run_lease} attempt ` +
          `${row.attempt} after ${was!.run_lease}/${was!.attempt}`,
      );
      this.beliefs[inst]!.push({ job: row.id, lease: Number(row.run_lease) });
      this.claims.set(row.id, (this.claims.get(row.id) ?? 0) + 1);
    }
    this.stats.claimed += rows.length;
  }

  /** The heartbeat reports exactly the believed leases that are no longer held. */
  private async heartbeat(inst: number): Promise<void> {
    const beliefs = this.beliefs[inst]!;
    if (beliefs.length === 0) return;
    const rows = await this.db.run(workerSql.heartbeatLeases, [
      beliefs.map((b) => b.job),
      beliefs.map((b) => String(b.lease)),
    ]);
    const lost = rows.map((r) => key(r.job_id, Number(r.run_lease))).sort();
    const dead = beliefs
      .filter((b) => !isLive(this.before, b))
      .map((b) => key(b.job, b.lease))
      .sort();
    this.expect(
      JSON.stringify(lost) === JSON.stringify(dead),
      () => `heartbeat lost ${lost}, but the dead beliefs were ${dead}`,
    );
  }

  /** A live holder's complete or fail lands; a stale holder's changes nothing at all. */
  private async finish(n: number, pick: number, how: 'complete' | 'fail'): Promise<void> {
    const inst = this.holder(n);
    if (inst === undefined) return;
    const beliefs = this.beliefs[inst]!;
    const [belief] = beliefs.splice(pick % beliefs.length, 1);
    const live = isLive(this.before, belief!);
    const rows =
      how === 'complete'
        ? await this.completeOne(belief!)
        : await this.db.run(workerSql.failJobs, [[belief!.job], [String(belief!.lease)], ['handler threw'], [0], [0]]);
    this.expect(
      rows.length === (live ? 1 : 0),
      () => `${how} by a ${live ? 'live' : 'stale'} holder returned ${rows.length} row(s)`,
    );
    if (!live) this.stats.staleFinishes++;
    const after = await this.db.snapshot();
    const was = this.before.jobs.get(belief!.job)!;
    const now = after.jobs.get(belief!.job)!;
    if (!live) {
      this.expect(
        sameRow(was, now) && JSON.stringify(after.leases) === JSON.stringify(this.before.leases),
        () => `a stale ${how} changed something: ${JSON.stringify(was)} -> ${JSON.stringify(now)}`,
      );
    } else if (how === 'fail') {
      const state = was.attempt >= was.max_attempts ? 'failed' : 'retryable';
      this.expect(
        now.state === state && now.errors === was.errors + 1 && now.last_error === 'handler threw',
        () => `fail moved ${JSON.stringify(was)} to ${JSON.stringify(now)}; expected ${state}`,
      );
    }
  }

  private async completeOne(belief: Belief): Promise<unknown[]> {
    // It returns the attempts it missed: none means this one completed.
    const missed = await this.db.run(workerSql.completeJobs, [[belief.job], [String(belief.lease)]]);
    const rows = missed.length === 0 ? [{ id: belief.job }] : [];
    for (const row of rows) this.completions.set(row.id, (this.completions.get(row.id) ?? 0) + 1);
    this.stats.completed += rows.length;
    return rows;
  }

  /** Releases exactly the live beliefs; then the instance is a new process. */
  private async shutdown(inst: number): Promise<void> {
    const beliefs = this.beliefs[inst]!;
    if (beliefs.length > 0) {
      const rows = await this.db.run(workerSql.releaseJobs, [
        beliefs.map((b) => b.job),
        beliefs.map((b) => String(b.lease)),
        RescueErrors.releasedOnShutdown,
        beliefs.map(() => true),
        beliefs.map(() => 0),
        beliefs.map(() => 0),
      ]);
      const released = rows.map((r) => r.id).sort();
      const live = beliefs
        .filter((b) => isLive(this.before, b))
        .map((b) => b.job)
        .sort();
      this.expect(
        JSON.stringify(released) === JSON.stringify(live),
        () => `released ${released}, but the live beliefs were ${live}`,
      );
      // Only a release that gave the attempt back counts; the one at the bound spent it.
      for (const { id } of rows.filter((r) => r.state === 'available'))
        this.releases.set(id, (this.releases.get(id) ?? 0) + 1);
      this.stats.released += released.length;
    }
    this.replace(inst);
  }

  private replace(inst: number): void {
    this.beliefs[inst] = [];
    this.generation[inst]!++;
  }

  private async expireLease(job: string, lease: number): Promise<void> {
    await this.db.sql(
      `UPDATE awa.active_leases SET deadline_at = now() - interval '1 second' WHERE job_id = $1 AND run_lease = $2`,
      [job, lease],
    );
  }

  private runRescue(kind: 'stale' | 'deadline' | 'orphan', dead: string[]): Promise<RescuedRow[]> {
    if (kind === 'stale')
      return this.db.run(maintenanceSql.rescueStaleHeartbeats, [
        ...RESCUE_PARAMS,
        STALE_AFTER_MS,
        RescueErrors.heartbeatStale,
      ]);
    if (kind === 'deadline')
      return this.db.run(maintenanceSql.rescueExpiredDeadlines, [...RESCUE_PARAMS, RescueErrors.deadlineExceeded]);
    return this.db.run(maintenanceSql.rescueOrphanedLeases, [...RESCUE_PARAMS, dead, RescueErrors.instanceDiedPrefix]);
  }

  private eligible(snap: Snapshot, kind: 'stale' | 'deadline' | 'orphan', dead: string[]): LeaseRow[] {
    return snap.leases.filter((l) =>
      kind === 'stale' ? l.stale : kind === 'deadline' ? l.expired : dead.includes(l.instance_id),
    );
  }

  /** A rescue takes exactly the eligible leases, and moves each job through the retry/fail path. */
  private async rescue(kind: 'stale' | 'deadline' | 'orphan', dead: string[]): Promise<void> {
    const expected = this.eligible(this.before, kind, dead);
    const rows = await this.runRescue(kind, dead);
    await this.checkRescued(
      kind,
      expected,
      rows.map((r) => r.id),
      this.before,
    );
  }

  private async checkRescued(kind: string, expected: LeaseRow[], rescued: string[], before: Snapshot): Promise<void> {
    const want = expected.map((l) => l.job_id).sort();
    this.expect(
      JSON.stringify([...rescued].sort()) === JSON.stringify(want),
      () => `${kind} rescue took ${rescued.sort()}, expected ${want}`,
    );
    this.stats.rescued += rescued.length;
    const after = await this.db.snapshot();
    for (const lease of expected) {
      const was = before.jobs.get(lease.job_id)!;
      const now = after.jobs.get(lease.job_id)!;
      const error =
        kind === 'stale'
          ? RescueErrors.heartbeatStale
          : kind === 'deadline'
            ? RescueErrors.deadlineExceeded
            : RescueErrors.instanceDied(lease.instance_id);
      const state = was.attempt >= was.max_attempts ? 'failed' : 'retryable';
      this.expect(
        now.state === state &&
          now.errors === was.errors + 1 &&
          now.last_error === error &&
          now.run_lease === was.run_lease,
        () =>
          `${kind} rescue moved ${JSON.stringify(was)} to ${JSON.stringify(now)}; expected ${state} with "${error}"`,
      );
    }
  }

  /**
   * A late completion and a rescue of the same lease, at once on two connections: exactly one of
   * them wins a live lease; a stale belief lets neither touch it. The `orphan` kind suspects a live
   * instance (a wrongly reaped one), which the fence must make harmless too.
   */
  private async race(n: number, pick: number, kind: 'stale' | 'deadline' | 'orphan'): Promise<void> {
    const inst = this.holder(n);
    if (inst === undefined) return;
    const beliefs = this.beliefs[inst]!;
    const [belief] = beliefs.splice(pick % beliefs.length, 1);
    if (kind === 'stale') {
      await this.db.sql(
        `UPDATE awa.active_leases SET heartbeat_at = now() - interval '1 hour', claimed_at = ` +
          `now() - interval '1 hour' WHERE job_id = $1 AND run_lease = $2`,
        [belief!.job, belief!.lease],
      );
    } else if (kind === 'deadline') {
      await this.expireLease(belief!.job, belief!.lease);
    }
    const suspects = kind === 'orphan' ? [...this.dead, this.id(inst)] : [...this.dead];
    const mid = await this.db.snapshot();
    const live = isLive(mid, belief!);
    if (live) this.stats.liveRaces++;
    const [completed, rescued] = await Promise.all([this.completeOne(belief!), this.runRescue(kind, suspects)]);
    const rescuedIds = rescued.map((r) => r.id);
    const wonByComplete = completed.length === 1;
    const wonByRescue = rescuedIds.includes(belief!.job) && mid.jobs.get(belief!.job)!.run_lease === belief!.lease;
    this.expect(
      live ? wonByComplete !== wonByRescue : !wonByComplete && !wonByRescue,
      () => `race on a ${live ? 'live' : 'stale'} lease: completed ${wonByComplete}, rescued ${wonByRescue}`,
    );
    const expected = this.eligible(mid, kind, suspects).filter((l) => !(wonByComplete && l.job_id === belief!.job));
    await this.checkRescued(kind, expected, rescuedIds, mid);
  }

  /** What may change in one step: run_lease only grows (on a claim), and finished jobs stay. */
  private checkTransition(before: Snapshot, after: Snapshot, c: Command): void {
    for (const [id, was] of before.jobs) {
      const now = after.jobs.get(id);
      this.expect(now !== undefined, () => `job ${id} vanished`);
      const grew = now!.run_lease - was.run_lease;
      this.expect(
        grew === 0 || (grew > 0 && c.t === 'claim'),
        () => `run_lease of ${id} went ${was.run_lease} -> ${now!.run_lease}`,
      );
      if (FINAL.has(was.state))
        this.expect(
          sameRow(was, now),
          () => `finished job ${id} changed: ${JSON.stringify(was)} -> ${JSON.stringify(now)}`,
        );
    }
  }

  /** The lease invariants, on one snapshot and the model. */
  private checkGlobal(snap: Snapshot): void {
    for (const job of snap.jobs.values()) {
      const leases = snap.leases.filter((l) => l.job_id === job.id);
      if (job.state === 'running') {
        this.expect(
          leases.length === 1 && leases[0]!.run_lease === job.run_lease,
          () => `running job ${job.id} (run_lease ${job.run_lease}) has leases ${JSON.stringify(leases)}`,
        );
      } else {
        this.expect(leases.length === 0, () => `${job.state} job ${job.id} has leases ${JSON.stringify(leases)}`);
      }
      const completions = this.completions.get(job.id) ?? 0;
      this.expect(
        completions === (job.state === 'completed' ? 1 : 0),
        () => `job ${job.id} is ${job.state} after ${completions} completion(s)`,
      );
      // Each claim ends once (complete, or one error entry for fail, rescue, release); one may be running.
      const open = (job.state === 'running' ? 1 : 0) + (job.state === 'completed' ? 1 : 0);
      this.expect(
        job.errors === (this.claims.get(job.id) ?? 0) - open,
        () =>
          `job ${job.id} has ${job.errors} error entries after ${this.claims.get(job.id) ?? 0} claims (${job.state})`,
      );
      this.expect(
        job.attempt === (this.claims.get(job.id) ?? 0) - (this.releases.get(job.id) ?? 0),
        () =>
          `job ${job.id} attempt ${job.attempt} after ${this.claims.get(job.id) ?? 0} claims ` +
          `and ${this.releases.get(job.id) ?? 0} releases`,
      );
    }
    // No lease is held by nobody: its instance believes it holds it, or crashed.
    const believed = new Set(this.beliefs.flatMap((bs, i) => bs.map((b) => `${this.id(i)}@${key(b.job, b.lease)}`)));
    for (const lease of snap.leases) {
      this.expect(
        this.dead.has(lease.instance_id) || believed.has(`${lease.instance_id}@${key(lease.job_id, lease.run_lease)}`),
        () =>
          `lease ${key(lease.job_id, lease.run_lease)} of ${lease.instance_id} is ` +
          `held by no live belief and no crashed instance`,
      );
    }
  }
}
