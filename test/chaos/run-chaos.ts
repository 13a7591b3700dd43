// The chaos suite (issue 3 §5, issue 16): worker processes are SIGKILLed while jobs run, PostgreSQL
// restarts once, one worker's connections freeze (a stalled network: no data, no FIN) and thaw, and
// afterwards the database and the handlers' side table must show that nothing was lost, nothing
// completed twice, and nothing completed from a stale lease. The load spans four queues: two plain, a
// keyed one (two kinds, one of which one worker slot does not handle) and a rate-limited one (one slot
// prefetches, the others do not); their own checks are in chaos-flow-checks.ts.
// A session also holds one snapshot open for a while (chaos-snapshot.ts), as a long report would, and
// every worker's connections are slowed for a while (chaos-slow-network.ts), as a distant database would;
// and bursts of dead rows come to the lease table throughout, for the leaders to vacuum (chaos-dead-rows.ts).
// `npm run chaos` runs it at full size (CLI: --jobs N --rate N --workers N --down-ms N --freeze-ms N
// --stall-ms N --snapshot-ms N --slow-ms N --slow-latency-ms N --dead-rows-ms N --rate-limit N --rate-period N); test/recovery/chaos.spec.ts runs it small inside
// `npm test`. Exits non-zero if any invariant fails (see chaos-invariants.ts).
// --second-server (issue 18; with --second-jobs N, default a fifth of --jobs, and --second-down-ms N):
// a second embedded PostgreSQL, on which every process runs a second, named AwaModule with its own
// queue; it is crashed (immediate shutdown) once, apart from the first server's restart, and its
// jobs are checked in its own database (chaos-second-server.ts); test/recovery/chaos-two-servers.spec.ts
// runs it small.
// Debugging knobs (env): CHAOS_LOG_DIR=dir keeps every process's whole output (and the handler starts); CHAOS_WORKER_NODE_OPTIONS
// passes NODE_OPTIONS to the processes; CHAOS_SHARED_SERVER=1 forces the shared-server fallback.
// The printed times are figures, not assertions: only the invariants decide the verdict.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseArgs } from './chaos-args.js';
import { ENV, workerVariant } from './chaos-config.js';
import {
  flowFigures,
  keyConcurrencyCheck,
  lastLeaseActivity,
  rateWindowCheck,
  stallCheck,
  strandedCheck,
  strandedJobs,
} from './chaos-flow-checks.js';
import { errorCounts, handedOffCount, recoveryFigures, throughput, type KillRecord } from './chaos-figures.js';
import { INSTRUMENTATION_SQL } from './chaos-instrumentation.js';
import { checkInvariants, EVENT_CHECKS, type Query } from './chaos-invariants.js';
import { WORKFLOW_CHECKS } from './chaos-workflow-checks.js';
import { redeliveryCheck, type EventFaults } from './chaos-event-checks.js';
import { startChaosServer, startSecondServer, type ChaosServer } from './chaos-postgres.js';
import { freezeOne, type FreezeRecord } from './chaos-freeze.js';
import { holdSnapshot, type SnapshotRecord } from './chaos-snapshot.js';
import { deadRowsCheck, DeadRowsLoad, type DeadRowsRecord } from './chaos-dead-rows.js';
import { readStarts } from './chaos-starts.js';
import { slowAll, type SlowNetworkRecord } from './chaos-slow-network.js';
import { ChaosProcess } from './chaos-process.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { reconnectMs as reconnected } from './chaos-reconnect.js';
import { DEFAULT_CHAOS_CONFIG, type ChaosConfig, type ChaosReport, type RestartRecord } from './chaos-run-types.js';
import { SecondServerRun } from './chaos-second-server.js';
import { formatSummary } from './chaos-summary.js';
import { setTimeout as sleep } from 'node:timers/promises';

export { DEFAULT_CHAOS_CONFIG, type ChaosConfig, type ChaosReport, type RestartRecord };

const between = ([lo, hi]: [number, number]) => lo + Math.random() * (hi - lo);

export async function runChaos(overrides: Partial<ChaosConfig> = {}): Promise<ChaosReport> {
  const config: ChaosConfig = { ...DEFAULT_CHAOS_CONFIG, ...overrides };
  if (config.secondServer && config.secondJobs === 0) config.secondJobs = Math.ceil(config.jobs / 5);
  const server = await startChaosServer(config.log);
  let second: SecondServerRun | undefined;
  try {
    if (config.secondServer) second = new SecondServerRun(await startSecondServer(), config.log);
    const run = new ChaosRun(config, server, second);
    try {
      return await run.execute();
    } finally {
      await run.dispose();
    }
  } finally {
    await second?.dispose();
    await server.stop();
  }
}

/** The first SIGKILL comes once this fraction of the jobs was enqueued (before the other faults). */
const FIRST_KILL_AT = 0.1;

class ChaosRun {
  private readonly pool: pg.Pool;
  private readonly query: Query;
  private readonly processes: ChaosProcess[] = [];
  private readonly kills: KillRecord[] = [];
  private readonly violations: string[] = [];
  private producer: ChaosProcess | undefined;
  private restart: RestartRecord | null = null;
  private freeze: FreezeRecord | null = null;
  private stop: FreezeRecord | null = null;
  /** The held snapshot, running in the background once started (see snapshotAt). */
  private snapshot: Promise<SnapshotRecord | null> | undefined;
  /** The slowed worker, running in the background once started (see slowAt). */
  private slow: Promise<SlowNetworkRecord | null> | undefined;
  /** The dead-row load, from the boot on (see deadRowsEveryMs), and its record once stopped. */
  private deadRowsLoad: DeadRowsLoad | undefined;
  private deadRows: DeadRowsRecord | null = null;
  /** Each worker reaches PostgreSQL through a proxy of its own, which the freeze and slow faults use. */
  private readonly proxies = new Map<ChaosProcess, TcpProxy>();
  /** When PostgreSQL was down or coming back: [stop, reconnected + 5 s]. */
  private restartWindow: [number, number] | undefined;
  private bootFailures = 0;
  /** Each worker's slot (see workerVariant): a replacement takes its victim's. */
  private readonly slots = new Map<ChaosProcess, number>();
  /** Where the workers append their handler starts (chaos-starts.ts). */
  private readonly startsDir = process.env.CHAOS_LOG_DIR ?? mkdtempSync(join(tmpdir(), 'awa-chaos-starts-'));
  /** When the last fault (restart, freeze) was over, JS clock. */
  private faultsOverAt = 0;
  /** The stranding check's findings, taken before the workers stop. */
  private stranded: string[] = [];
  /** The post-mortem of a stall the stranding check could not place (stallPostMortem). */
  private stall: string[] = [];
  /** The run ended because nothing was leased or freed for stallMs, not because every job finished. */
  private endedByStall = false;

  constructor(
    private readonly config: ChaosConfig,
    private readonly server: ChaosServer,
    private readonly second?: SecondServerRun,
  ) {
    this.pool = new pg.Pool({ connectionString: server.url, max: 3 });
    this.pool.on('error', () => undefined); // idle connections die in the restart, by design
    this.query = async (text, values) => (await this.pool.query(text, values)).rows;
  }

  async execute(): Promise<ChaosReport> {
    const { config } = this;
    config.log(
      `chaos: ${config.jobs} jobs at ${config.rate}/s, ${config.workers} workers, on ${this.server.description}` +
        (this.second ? `; ${config.secondJobs} more on the ${this.second.server.description}` : ''),
    );
    await this.boot();
    if (config.deadRowsEveryMs !== null)
      this.deadRowsLoad = new DeadRowsLoad(this.server.url, config.deadRowsEveryMs, config.log);
    const timeoutMs = config.timeoutMs || (config.jobs / config.rate) * 1000 + 120_000;
    const giveUpAt = Date.now() + timeoutMs;
    let nextKillAt = Date.now() + between(config.killEveryMs);
    let nextProgressAt = 0;
    for (;;) {
      await sleep(200);
      await this.replaceCrashed();
      if (this.producer && !this.producer.alive && !this.producer.expectedExit) {
        this.producer.expectedExit = true; // reported once
        this.violations.push(
          `the producer exited by itself ` +
            `(${this.producer.exitCode ?? this.producer.exitSignal}):\n${this.producer.diagnostics()}`,
        );
        if (!this.producedAll) break; // nobody will enqueue the rest
      }
      const status = await this.status().catch(() => undefined);
      if (status && Date.now() >= nextProgressAt) {
        config.log(
          `chaos: produced ${this.producer?.produced ?? 0}, ` +
            `${JSON.stringify(status.states)}, leases ${status.leases}, kills ` +
            `${this.kills.length}`,
        );
        nextProgressAt = Date.now() + 2_000;
      }
      if (
        status &&
        this.producedAll &&
        status.finished === config.jobs &&
        status.openSteps === 0 &&
        status.leases === 0 &&
        (await this.secondDone())
      )
        break;
      if (status && this.producedAll && status.leases === 0 && (await this.stalled())) {
        this.endedByStall = true;
        break;
      }
      if (Date.now() > giveUpAt) {
        this.violations.push(`the jobs were not all finished within ${Math.round(timeoutMs / 1000)} s`);
        break;
      }
      // The first kill comes early, before the other faults: each of them puts the next kill off by
      // killEveryMs, so a short run on a slow machine could finish its jobs without one (CI's small
      // two-server run did). Retried every poll until a second worker is ready to take the jobs.
      if (
        this.kills.length === 0 &&
        status &&
        status.finished < config.jobs &&
        (this.producer?.produced ?? 0) >= FIRST_KILL_AT * config.jobs
      ) {
        if (await this.killOne()) {
          nextKillAt = Date.now() + between(config.killEveryMs);
          continue;
        }
      }
      if (
        this.second &&
        this.second.fault === null &&
        config.secondStopAt !== null &&
        (this.producer?.produced ?? 0) >= config.secondStopAt * config.jobs
      ) {
        const stoppedAt = Date.now();
        this.violations.push(
          ...(await this.second.crashAndRestart(this.query, config.secondDownMs, () => this.liveSince(stoppedAt))),
        );
        this.faultsOverAt = Date.now();
        nextKillAt = Date.now() + between(config.killEveryMs);
        continue;
      }
      if (
        this.snapshot === undefined &&
        config.snapshotAt !== null &&
        (this.producer?.produced ?? 0) >= config.snapshotAt * config.jobs
      )
        this.snapshot = holdSnapshot(
          this.server.url,
          config.snapshotMs,
          async () => (await this.status()).finished,
          config.log,
        );
      if (
        this.slow === undefined &&
        config.slowAt !== null &&
        (this.producer?.produced ?? 0) >= config.slowAt * config.jobs
      )
        this.slow = slowAll(() => [...this.proxies.values()], config.slowMs, config.slowLatencyMs, config.log).then(
          (record) => {
            this.faultsOverAt = Date.now();
            return record;
          },
        );
      if (
        this.restart === null &&
        config.restartAt !== null &&
        (this.producer?.produced ?? 0) >= config.restartAt * config.jobs
      ) {
        await this.restartPostgres();
        this.faultsOverAt = Date.now();
        nextKillAt = Date.now() + between(config.killEveryMs);
        continue;
      }
      if (
        this.stop === null &&
        config.stopAt !== null &&
        (this.restart !== null || config.restartAt === null) &&
        (this.producer?.produced ?? 0) >= config.stopAt * config.jobs
      ) {
        const stopped = freezeOne(
          this.workers,
          (w) => this.proxies.get(w),
          this.query,
          config.freezeMs,
          config.log,
          'process',
        );
        this.stop = (await stopped.catch(() => undefined)) ?? null;
        this.faultsOverAt = Date.now();
        nextKillAt = Date.now() + between(config.killEveryMs);
        continue;
      }
      if (
        this.freeze === null &&
        config.freezeAt !== null &&
        (this.restart !== null || config.restartAt === null) &&
        (this.producer?.produced ?? 0) >= config.freezeAt * config.jobs
      ) {
        this.freeze =
          (await freezeOne(this.workers, (w) => this.proxies.get(w), this.query, config.freezeMs, config.log).catch(
            () => undefined,
          )) ?? null;
        this.faultsOverAt = Date.now();
        nextKillAt = Date.now() + between(config.killEveryMs);
        continue;
      }
      // Not while nothing is leased: a kill then recovers nothing, and would only shorten the stranding
      // check's idle window.
      if (Date.now() >= nextKillAt && status && status.finished < config.jobs && status.leases > 0) {
        nextKillAt = Date.now() + ((await this.killOne()) ? between(config.killEveryMs) : 500);
      }
    }
    const idle = this.idleWindow(await lastLeaseActivity(this.query));
    this.stranded = await strandedJobs(this.query, idle, this.config.stallMs);
    // A stall the stranding check cannot place (its conditions exclude the jobs): say what it saw.
    if (this.endedByStall && this.stranded.length === 0) this.stall = await this.stallPostMortem(idle);
    await this.eventGroupCaughtUp();
    if (this.second) this.violations.push(...(await this.second.eventGroupCaughtUp()));
    this.deadRows = (await this.deadRowsLoad?.stop(10_000)) ?? null; // while a leader lives
    await this.stopAll();
    return this.report();
  }

  /**
   * After a stall with jobs unfinished: those jobs (by queue, kind and state, with their last
   * transition), the instances' rows and the workers, for a post-mortem. Empty when every job finished.
   */
  private async stallPostMortem(idle: { since: number; pids: number[] }): Promise<string[]> {
    const jobs = await this.query(
      `SELECT j.queue, j.kind, j.state, count(*)::int AS n, min(j.run_at) AS first_run_at,
              count(j.concurrency_key)::int AS keyed,
              (SELECT max(t.at) FROM chaos.transitions t WHERE t.job_id = ANY (array_agg(j.id))) AS last_transition
         FROM awa.all_jobs j
        WHERE j.workflow_id IS NULL AND j.state NOT IN ('completed', 'failed')
        GROUP BY j.queue, j.kind, j.state`,
    );
    if (jobs.length === 0) return [];
    const instances = await this.query('SELECT pid, handlers, heartbeat_at FROM awa.instances ORDER BY pid');
    const workers = this.workers.map((w) => ({ pid: w.pid, alive: w.alive, readyAt: w.readyAt }));
    // Backends at work or waiting (a claim blocked behind a lock would show here), with who blocks them.
    const backends = await this.query(
      `SELECT pid, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS blocked_by,
              now() - xact_start AS in_transaction, left(query, 120) AS query
         FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
    );
    return [
      `the run stalled (nothing leased or freed for ${this.config.stallMs} ms) with jobs unfinished: ` +
        JSON.stringify({ since: new Date(idle.since), idlePids: idle.pids, jobs, instances, workers, backends }),
    ];
  }

  /** The workers that could claim since `since`, and since when they all could: see strandedJobs. */
  private idleWindow(lastActivity: number | null) {
    const since = Math.max(
      lastActivity ?? 0,
      this.faultsOverAt,
      this.restartWindow?.[1] ?? 0,
      this.second?.window?.[1] ?? 0,
    );
    const pids = this.workers.filter((w) => w.alive && w.readyAt !== undefined && w.readyAt < since).map((w) => w.pid);
    return { since, pids };
  }

  /** Nothing leased or freed for stallMs (and no fault since): what is still unfinished waits in vain. */
  private async stalled(): Promise<boolean> {
    const activity = await Promise.all(
      [this.query, ...(this.second ? [this.second.query] : [])].map((q) =>
        lastLeaseActivity(q).catch(() => Date.now()),
      ),
    );
    const { since } = this.idleWindow(Math.max(...activity.map((at) => at ?? 0)));
    if (Date.now() - since < this.config.stallMs) return false;
    this.config.log(`chaos: no lease taken or freed for ${this.config.stallMs} ms with jobs unfinished: stalled`);
    return true;
  }

  async dispose(): Promise<void> {
    for (const p of this.processes) if (p.alive) p.kill('SIGKILL');
    await Promise.all(this.processes.map((p) => p.exit(5_000)));
    await Promise.all([...this.proxies.values()].map((proxy) => proxy.close()));
    await this.pool.end().catch(() => undefined);
    if (!process.env.CHAOS_LOG_DIR) rmSync(this.startsDir, { recursive: true, force: true });
  }

  private get producedAll(): boolean {
    return this.producer?.producedAll === true;
  }

  private get workers(): ChaosProcess[] {
    return this.processes.filter((p) => p.role === 'worker');
  }

  /** One worker first (it applies the migrations), the instrumentation, the others, then the producer. */
  private async boot(): Promise<void> {
    await (await this.spawnWorker(0)).ready();
    for (const statement of INSTRUMENTATION_SQL) await this.query(statement);
    await this.second?.instrument();
    const others = await Promise.all(
      Array.from({ length: this.config.workers - 1 }, (_, i) => this.spawnWorker(i + 1)),
    );
    await Promise.all(others.map((w) => w.ready()));
    this.producer = new ChaosProcess('producer', this.server.url, {
      [ENV.jobs]: String(this.config.jobs),
      [ENV.rate]: String(this.config.rate),
      [ENV.mix]: JSON.stringify(this.config.mix),
      [ENV.rateLimit]: JSON.stringify(this.config.rateLimit),
      ...this.secondEnv(),
      ...(this.second && {
        [ENV.secondJobs]: String(this.config.secondJobs),
        [ENV.secondRate]: String((this.config.rate * this.config.secondJobs) / this.config.jobs),
      }),
    });
    this.processes.push(this.producer);
    await this.producer.ready();
  }

  private async spawnWorker(slot: number): Promise<ChaosProcess> {
    const url = new URL(this.server.url);
    const proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    const worker = new ChaosProcess('worker', TcpProxy.url(this.server.url, proxy), {
      [ENV.variant]: JSON.stringify(workerVariant(slot, this.config.workers)),
      [ENV.rateLimit]: JSON.stringify(this.config.rateLimit),
      [ENV.startsDir]: this.startsDir,
      ...this.secondEnv(),
    });
    this.proxies.set(worker, proxy);
    this.slots.set(worker, slot);
    this.processes.push(worker);
    return worker;
  }

  /**
   * A worker that died without being killed is a crash: a violation, and it is replaced. Except a
   * worker that was still booting while PostgreSQL was down: an app may fail to start without its
   * database (its supervisor restarts it); that is counted, not failed.
   */
  private async replaceCrashed(): Promise<void> {
    for (const worker of this.workers) {
      if (worker.alive || worker.expectedExit) continue;
      worker.expectedExit = true; // reported once
      const windows = [this.restartWindow, this.second?.window].filter((w) => w !== undefined);
      if (
        worker.readyAt === undefined &&
        windows.some((window) => worker.spawnedAt <= window[1] && worker.exitedAt! >= window[0])
      ) {
        this.bootFailures++;
        this.config.log(`chaos: worker ${worker.pid} failed to boot while a server was down; replacing it`);
      } else {
        this.violations.push(
          `worker ${worker.pid} exited by itself (${worker.exitCode ?? worker.exitSignal}):\n${worker.diagnostics()}`,
        );
      }
      await this.spawnWorker(this.slots.get(worker)!);
    }
  }

  /** The faults after which the audit group may see an event again (see eventChecks). */
  private eventFaults(): EventFaults {
    const pids = [...this.kills.map((k) => k.pid), this.freeze?.pid, this.stop?.pid].filter(
      (pid): pid is number => pid !== undefined,
    );
    const restart = this.restart && {
      from: this.restart.at.getTime() - 1_000,
      to: this.restart.at.getTime() + this.restart.downMs + (this.restart.reconnectMs ?? 30_000) + 5_000,
    };
    return { pids, restart };
  }

  /** Processes alive now that were ready before `at` (JS clock). */
  private liveSince(at: number): number {
    return this.processes.filter((p) => p.alive && p.readyAt !== undefined && p.readyAt < at).length;
  }

  /** Every process reaches the second server directly (the freeze fault is the first server's). */
  private secondEnv(): Record<string, string> {
    return this.second ? { [ENV.secondUrl]: this.second.server.url } : {};
  }

  /** The second server (if any): everything produced there is finished, and no lease is held. */
  private async secondDone(): Promise<boolean> {
    if (!this.second) return true;
    const status = await this.second.status();
    return (
      this.producer?.secondProduced === this.config.secondJobs &&
      status?.finished === this.config.secondJobs &&
      status.leases === 0
    );
  }

  private async workflowFigures(): Promise<ChaosReport['workflows']> {
    const rows = await this.query(
      'SELECT state, count(*)::int AS n FROM awa.all_jobs WHERE workflow_id IS NOT NULL GROUP BY state',
    );
    const [{ graphs }] = await this.query(
      'SELECT count(DISTINCT workflow_id)::int AS graphs FROM awa.all_jobs WHERE workflow_id IS NOT NULL',
    );
    const states = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    return { graphs, steps: rows.reduce((total, r) => total + r.n, 0), states };
  }

  /** Jobs by state; the plain jobs finished; the workflow steps not ended yet; the leases held. */
  private async status(): Promise<{
    states: Record<string, number>;
    finished: number;
    openSteps: number;
    leases: number;
  }> {
    const rows = await this.query(
      `SELECT state, count(*)::int AS n,
              count(*) FILTER (WHERE workflow_id IS NULL AND state IN ('completed', 'failed'))::int AS finished,
              count(*) FILTER (WHERE workflow_id IS NOT NULL
                                 AND state NOT IN ('completed', 'failed', 'cancelled'))::int AS open_steps
         FROM awa.all_jobs GROUP BY state`,
    );
    const [{ n: leases }] = await this.query('SELECT count(*)::int AS n FROM awa.active_leases');
    const states = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    const sum = (key: string) => rows.reduce((total, r) => total + r[key], 0);
    return { states, finished: sum('finished'), openSteps: sum('open_steps'), leases };
  }

  /**
   * SIGKILLs a random ready worker (only while another one is ready, so that someone can take its
   * jobs), after noting the leases it holds, and starts a replacement. False if it had to wait.
   */
  private async killOne(): Promise<boolean> {
    const ready = this.workers.filter((w) => w.alive && !w.expectedExit && w.readyAt !== undefined);
    if (ready.length < 2) return false;
    const victim = ready[Math.floor(Math.random() * ready.length)]!;
    let snapshot;
    try {
      [snapshot] = await this.query(
        `SELECT clock_timestamp() AS at, coalesce(array_agg(l.job_id::text), '{}') AS job_ids,
                coalesce(array_agg(l.run_lease::text), '{}') AS run_leases
           FROM awa.active_leases l JOIN chaos.instance_pids p ON p.instance_id = l.instance_id WHERE p.pid = $1`,
        [victim.pid],
      );
    } catch {
      return false;
    }
    victim.kill('SIGKILL');
    this.kills.push({ pid: victim.pid, at: snapshot.at, jobIds: snapshot.job_ids, runLeases: snapshot.run_leases });
    this.config.log(`chaos: SIGKILL worker ${victim.pid} holding ${snapshot.job_ids.length} job(s)`);
    await this.spawnWorker(this.slots.get(victim)!);
    return true;
  }

  private async restartPostgres(): Promise<void> {
    this.config.log('chaos: restarting PostgreSQL');
    const [{ at }] = await this.query('SELECT clock_timestamp() AS at');
    const stoppedAt = Date.now();
    await this.server.restart(this.config.downMs);
    const upAt = Date.now();
    const reconnectMs = await reconnected(this.query, () => this.liveSince(stoppedAt));
    this.restart = { at, downMs: upAt - stoppedAt, reconnectMs, bootFailures: 0 };
    this.restartWindow = [stoppedAt, Date.now() + 5_000];
    if (reconnectMs === null)
      this.violations.push(
        'after the PostgreSQL restart, the instances did not all reconnect (or no leader was elected) within 30 s',
      );
    this.config.log(
      `chaos: PostgreSQL back after ${upAt - stoppedAt} ms; instances reconnected ${reconnectMs ?? 'never'} ms later`,
    );
  }

  /** Waits (up to 30 s) for the durable-event group `chaos` to acknowledge every stored event. */
  private async eventGroupCaughtUp(): Promise<void> {
    for (const until = Date.now() + 30_000; ; await sleep(100)) {
      const [{ lag }] = await this.query(
        `SELECT count(*)::int AS lag FROM awa.job_events e, awa.event_group_positions p
          WHERE p."group" = 'chaos' AND (e.tx, e.id) > (p.position_tx, p.position_id)`,
      );
      if (lag === 0) return;
      if (Date.now() > until) {
        this.violations.push(`the durable-event group had ${lag} event(s) left 30 s after the jobs finished`);
        return;
      }
    }
  }

  /** SIGTERM to everyone: each must drain and exit by itself. */
  private async stopAll(): Promise<void> {
    const alive = this.processes.filter((p) => p.alive);
    alive.forEach((p) => p.kill('SIGTERM'));
    await Promise.all(
      alive.map(async (p) => {
        if (!(await p.exit(20_000))) {
          this.violations.push(
            `${p.role} ${p.pid} did not exit within 20 s of SIGTERM:\n${p.tail.slice(-20).join('\n')}`,
          );
          p.kill('SIGKILL');
        }
      }),
    );
  }

  private async report(): Promise<ChaosReport> {
    const { checked, violations } = await checkInvariants(this.query, this.config.jobs, [
      rateWindowCheck(this.startsDir, this.config.rateLimit),
      keyConcurrencyCheck(),
      strandedCheck(this.stranded),
      stallCheck(this.stall),
      ...WORKFLOW_CHECKS,
      ...EVENT_CHECKS,
      redeliveryCheck(() => this.eventFaults()),
      deadRowsCheck(() => this.deadRows),
    ]);
    const second = await this.second?.check(this.query, this.config.secondJobs, this.eventFaults().pids);
    checked.push(...(second?.checked ?? []));
    const allViolations = [...this.violations, ...violations, ...(second?.violations ?? [])];
    const status = await this.status();
    const snapshot = (await this.snapshot) ?? null;
    const slow = (await this.slow) ?? null;
    const speed = await throughput(this.query);
    const handedOff = await handedOffCount(this.query);
    const recovery = await recoveryFigures(this.query, this.kills);
    const errors = await errorCounts(
      this.query,
      this.kills.map((k) => k.pid),
    );
    const logs = { leaseLost: 0, leaderAcquired: 0, sessionLost: 0, writeRetries: 0, eventLeaseLost: 0 };
    for (const p of this.processes)
      for (const key of Object.keys(logs) as Array<keyof typeof logs>) logs[key] += p.counts[key];
    const report: Omit<ChaosReport, 'summary'> = {
      ok: allViolations.length === 0,
      violations: allViolations,
      checked,
      server: this.server.description,
      jobs: this.config.jobs,
      states: status.states,
      handedOff,
      seconds: speed.seconds,
      jobsPerSecond: speed.jobsPerSecond,
      peakPerSecond: speed.peakPerSecond,
      kills: this.kills.length,
      recovery,
      errors,
      restart: this.restart && {
        ...this.restart,
        atSeconds: speed.startedAt ? (this.restart.at.getTime() - speed.startedAt.getTime()) / 1000 : 0,
        bootFailures: this.bootFailures,
      },
      freeze: this.freeze && {
        ...this.freeze,
        atSeconds: speed.startedAt ? (this.freeze.at.getTime() - speed.startedAt.getTime()) / 1000 : 0,
        lateResultsDiscarded: this.processes.find((p) => p.pid === this.freeze!.pid)?.counts.leaseLost ?? 0,
      },
      stop: this.stop && {
        ...this.stop,
        atSeconds: speed.startedAt ? (this.stop.at.getTime() - speed.startedAt.getTime()) / 1000 : 0,
      },
      snapshot: snapshot && {
        ...snapshot,
        atSeconds: speed.startedAt ? (snapshot.at.getTime() - speed.startedAt.getTime()) / 1000 : 0,
      },
      slow: slow && {
        ...slow,
        atSeconds: speed.startedAt ? (slow.at.getTime() - speed.startedAt.getTime()) / 1000 : 0,
        ratedStarts: readStarts(this.startsDir).filter(
          (s) => s.at >= slow.at.getTime() && s.at <= slow.at.getTime() + slow.ms,
        ).length,
      },
      deadRows: this.deadRows,
      flow: await flowFigures(this.query, this.startsDir, this.config.rateLimit),
      workflows: await this.workflowFigures(),
      events: (
        await this.query(
          `SELECT (SELECT count(*) FROM awa.job_events)::int AS stored,
                  (SELECT count(*) FROM chaos.event_deliveries)::int AS delivered,
                  (SELECT count(*) FROM (SELECT FROM chaos.event_deliveries GROUP BY event_id HAVING count(*) > 1) d)::int
                    AS redelivered`,
        )
      )[0],
      second: (await this.second?.report(this.config.secondJobs, speed.startedAt)) ?? null,
      logs,
    };
    return { ...report, summary: formatSummary(report, this.config) };
  }
}

async function main(): Promise<void> {
  const report = await runChaos({ ...parseArgs(process.argv.slice(2)), log: (line) => console.log(line) });
  console.log(report.summary);
  process.exit(report.ok ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
