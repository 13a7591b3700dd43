import type { ChaosConfig, ChaosReport } from './chaos-run-types.js';

const ms = (value: number | null) => (value === null ? 'n/a' : `${Math.round(value)} ms`);
const counts = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

/** The second server's lines (--second-server), none without it. */
function secondServerLines(second: ChaosReport['second']): string[] {
  if (!second) return [];
  const fault = second.fault;
  return [
    `server 2:     ${second.server}`,
    `              ${second.jobs} jobs on its queue (${counts(second.states)}); ${second.events.stored} durable ` +
      `events, ${second.events.delivered} deliveries; ${second.handedOff} job(s) handed eagerly at enqueue and done in that attempt`,
    `server 2 down: ${
      fault
        ? `at +${(fault.atSeconds ?? 0).toFixed(1)}s killed (immediate shutdown) holding ${fault.leasesHeld} lease(s), ` +
          `down ${fault.downMs} ms; meanwhile the first server completed ${fault.completedOnFirstMeanwhile} job(s); ` +
          `every instance reconnected with a leader ${ms(fault.reconnectMs)} after`
        : 'none'
    }`,
  ];
}

/** The printed figures and verdict of a chaos run. */
export function formatSummary(report: Omit<ChaosReport, 'summary'>, config: ChaosConfig): string {
  const { recovery, restart, flow } = report;
  const failed = (name: string) => report.violations.some((v) => v.startsWith(name));
  const passed = report.checked.filter((name) => !failed(name)).length;
  const lines = [
    '',
    '=== nestjs-awa chaos summary ===',
    `server:       ${report.server}`,
    `jobs:         ${report.jobs} (${counts(report.states)}), enqueued at up to ${config.rate}/s over 4 queues`,
    `handoff:      ${report.handedOff} job(s) handed to an idle worker at enqueue and done in that attempt ` +
      `(queue fast, single enqueues)`,
    `throughput:   ${report.jobsPerSecond.toFixed(1)} jobs/s over ${report.seconds.toFixed(1)} s ` +
      `(first enqueue to last finish); busiest second ${report.peakPerSecond}`,
    `kills:        ${report.kills} SIGKILLs, each victim replaced at once ` +
      `(${config.workers} workers; ${recovery.withJobs} victims held jobs)`,
    `recovery:     kill -> the victim's jobs running again elsewhere (or failed for ` +
      `good): p50 ${ms(recovery.p50Ms)}, max ${ms(recovery.maxMs)}`,
    `              the victims' leases were freed by: ${counts(recovery.freedBy)}`,
    `              per kill: ${
      recovery.perKill
        .map((k) => `+${k.atSeconds.toFixed(1)}s ${k.jobs} job(s) ${Math.round(k.ms)} ms (${k.freedBy.join('/')})`)
        .join('; ') || 'none'
    }`,
    `restart:      ${
      restart
        ? `at +${(restart.atSeconds ?? 0).toFixed(1)}s PostgreSQL down ${restart.downMs} ms; every ` +
          `instance reconnected with a leader ${ms(restart.reconnectMs)} after` +
          `${restart.bootFailures > 0 ? `; ${restart.bootFailures} booting worker(s) gave up and were replaced` : ''}`
        : 'none'
    }`,
    `freeze:       ${
      report.freeze
        ? `at +${(report.freeze.atSeconds ?? 0).toFixed(1)}s worker ${report.freeze.pid}'s ` +
          `connections stalled ${report.freeze.ms} ms (no data, no FIN) ` +
          `holding ${report.freeze.jobsHeld} job(s), ${report.freeze.rescued} rescued meanwhile ` +
          `(leader: ${report.freeze.leaderPid ?? 'none'}); after the thaw ` +
          `${report.freeze.lateResultsDiscarded ?? 0} late result(s) discarded as lease lost`
        : 'none'
    }`,
    `sigstop:      ${
      report.stop
        ? `at +${(report.stop.atSeconds ?? 0).toFixed(1)}s worker ${report.stop.pid} stopped ${report.stop.ms} ms ` +
          `(connections open) holding ${report.stop.jobsHeld} job(s), ${report.stop.rescued} rescued meanwhile`
        : 'none'
    }`,
    `snapshot:     ${
      report.snapshot
        ? `at +${(report.snapshot.atSeconds ?? 0).toFixed(1)}s held ${report.snapshot.heldMs} ms ` +
          `(REPEATABLE READ, no index entry of a job claimed since could be marked dead)` +
          (report.snapshot.endedByRestart ? ', until the restart ended its session' : '') +
          `, ${report.snapshot.finishedMeanwhile ?? 'uncounted'} job(s) finished meanwhile`
        : 'none'
    }`,
    `slow network: ${
      report.slow
        ? `at +${(report.slow.atSeconds ?? 0).toFixed(1)}s every worker's connections delayed ` +
          `${report.slow.latencyMs} ms each way for ${report.slow.ms} ms; ${report.slow.ratedStarts ?? 0} ` +
          `rated job(s) started meanwhile`
        : 'none'
    }`,
    `dead rows:    ${
      report.deadRows
        ? `${report.deadRows.bursts} burst(s) of ${report.deadRows.rows} in awa.active_leases; ` +
          `${report.deadRows.vacuums} vacuum(s) of it by the leaders`
        : 'none'
    }`,
    `rated queue:  limit ${flow.rateLimit.limit} per ${flow.rateLimit.period} ms; ${flow.ratedStarts} handler ` +
      `starts, at most ${flow.busiestStarts} in one window (claims: at most ${flow.busiestClaims}); ` +
      `claim -> handler entry p50 ${ms(flow.claimToStartP50)}, max ${ms(flow.claimToStartMax)}`,
    `keyed queue:  at most ${flow.mostKeyLeases} leases of one key at once`,
    `workflows:    ${report.workflows.graphs} diamond graphs, ${report.workflows.steps} steps ` +
      `(${counts(report.workflows.states)}; included in the jobs above)`,
    `event group:  ${report.events.stored} durable events stored, ${report.events.delivered} deliveries, ` +
      `${report.events.redelivered} event(s) delivered more than once (at least once allows it)`,
    ...secondServerLines(report.second),
    `error entries (rescues and handler errors): ${counts(report.errors)}`,
    `worker logs:  results discarded as lease lost ${report.logs.leaseLost}, ` +
      `leader acquisitions ${report.logs.leaderAcquired}, ` +
      `session losses ${report.logs.sessionLost}, result-write retries ${report.logs.writeRetries}, ` +
      `event-group leases lost ${report.logs.eventLeaseLost}`,
    `invariants:   ${passed}/${report.checked.length} checks passed` +
      (report.ok ? '' : ` — ${report.violations.length} violation(s)`),
    ...report.checked.map((name) => `  ${failed(name) ? 'FAIL' : 'ok  '} ${name}`),
    ...report.violations.map((v) => `  VIOLATION ${v}`),
    report.ok ? 'RESULT: PASS' : 'RESULT: FAIL',
  ];
  return lines.join('\n');
}
