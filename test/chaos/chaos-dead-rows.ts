// The dead-row load of the chaos run: a session that leaves bursts of dead rows in awa.active_leases
// (a busy minute's churn, in a run that is small), so that the maintenance leader's vacuum of the hot
// tables (HotTableVacuumTask) runs among the other faults: leaders killed mid-sweep, PostgreSQL
// restarted, connections frozen. Each burst inserts and deletes its rows in one transaction, with
// the chaos triggers off (session_replication_role), so no other session, and no invariant, sees them.
import pg from 'pg';
import { VACUUM_MIN_DEAD_ROWS } from '../../lib/maintenance/tasks/hot-table-vacuum.task.js';
import type { Check } from './chaos-invariants.js';

export interface DeadRowsRecord {
  /** Bursts left, each of `rows` dead rows. */
  bursts: number;
  rows: number;
  /** Vacuums of awa.active_leases by hand (the leaders') seen in the run: counters a crash reset are added up. */
  vacuums: number;
}

const VACUUMS = `SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relid = 'awa.active_leases'::regclass`;

/** Leaves a burst of dead rows every `everyMs` until stop(); a burst that meets the restart is skipped. */
export class DeadRowsLoad {
  private readonly record: DeadRowsRecord = { bursts: 0, rows: VACUUM_MIN_DEAD_ROWS * 2, vacuums: 0 };
  private lastCount = 0;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly url: string,
    everyMs: number,
    private readonly log: (line: string) => void,
  ) {
    this.loop = this.run(everyMs);
  }

  private async run(everyMs: number): Promise<void> {
    while (!this.stopped) {
      await this.burst().catch(() => undefined); // the restart: the next one goes on
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }

  private async burst(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'chaos-dead-rows' });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await this.countVacuums(client);
      await client.query('BEGIN');
      await client.query('SET LOCAL session_replication_role = replica'); // no chaos trigger sees them
      await client.query(
        `INSERT INTO awa.active_leases (job_id, run_lease, instance_id)
         SELECT -g, 1, 'chaos-dead-rows' FROM generate_series(1, $1::int) g`,
        [this.record.rows],
      );
      await client.query(`DELETE FROM awa.active_leases WHERE job_id < 0`);
      await client.query('COMMIT');
      this.record.bursts++;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Adds the vacuums since the last look; a counter lower than then was reset by a crash. */
  private async countVacuums(client: pg.Client): Promise<void> {
    const n = Number((await client.query(VACUUMS)).rows[0]?.n ?? 0);
    this.record.vacuums += n >= this.lastCount ? n - this.lastCount : n;
    this.lastCount = n;
  }

  /** Stops the bursts and waits (up to `waitMs`) for a leader to vacuum after the last one. */
  async stop(waitMs: number): Promise<DeadRowsRecord> {
    this.stopped = true;
    await this.loop;
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const until = Date.now() + waitMs;
      const before = this.record.vacuums;
      do {
        await this.countVacuums(client);
        if (this.record.vacuums > before) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      } while (Date.now() < until);
    } catch (error) {
      this.log(`chaos: the vacuums could not be counted: ${String(error)}`);
    } finally {
      await client.end().catch(() => undefined);
    }
    return { ...this.record };
  }
}

export const DEAD_ROWS_CHECK = 'the maintenance leaders vacuumed awa.active_leases after bursts of dead rows';

/** The leaders vacuumed the lease table while its dead rows came; a run with no burst fails too. */
export function deadRowsCheck(record: () => DeadRowsRecord | null): Check {
  return {
    name: DEAD_ROWS_CHECK,
    run: async () => {
      const r = record();
      if (r === null) return []; // the load is off (deadRowsEveryMs null)
      if (r.bursts === 0) return ['no burst of dead rows could be left'];
      return r.vacuums > 0 ? [] : [`${r.bursts} burst(s) of ${r.rows} dead rows, and no vacuum of awa.active_leases`];
    },
  };
}
