import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { CLAIM_FLOW_FUNCTION_V1 } from './flow-claim-v1.function.js';

/**
 * Flow control: a fleet-wide rate limit per queue and a concurrency limit per key, both enforced by
 * the claim itself (awa.claim_flow). The rate limit is a sliding log on the queue's row; the keys are
 * rows of awa.flow_keys, locked by the claim, whose `running` count every deleted lease gives back.
 * Jobs and leases without a key pay next to nothing: the row trigger has a WHEN condition on the key,
 * the statement triggers (insert, lease deletion) leave at once when no row had a key, and the plain
 * claim is unchanged.
 */
export class AwaFlowControl1764600000002 implements MigrationInterface {
  name = 'AwaFlowControl1764600000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.jobs ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 200)`,
      // The key (and its queue) of a keyed attempt, so that deleting its lease can free its slot.
      `ALTER TABLE awa.active_leases ADD COLUMN concurrency_key text, ADD COLUMN flow_queue text`,
      // The rate limit's sliding log: (start time, attempts started then) of the claims of the last period.
      `ALTER TABLE awa.queues
        ADD COLUMN held_until timestamptz,
        ADD COLUMN rate_at    timestamptz[] NOT NULL DEFAULT '{}',
        ADD COLUMN rate_n     integer[]     NOT NULL DEFAULT '{}'`,
      // Available keyed jobs of one key, in claim order.
      `CREATE INDEX jobs_flow_idx ON awa.jobs (queue, concurrency_key, priority, run_at, id)
        WHERE state = 'available' AND concurrency_key IS NOT NULL`,
      `CREATE TABLE awa.flow_keys (
        queue           text        NOT NULL,
        key             text        NOT NULL,
        running         integer     NOT NULL DEFAULT 0,
        max_running     integer     CHECK (max_running >= 0),
        has_waiting     boolean     NOT NULL DEFAULT true,
        saturated       boolean     NOT NULL DEFAULT false,
        held_until      timestamptz,
        last_claimed_at timestamptz NOT NULL DEFAULT '-infinity',
        PRIMARY KEY (queue, key)
      ) WITH (fillfactor = 30)`,
      // fillfactor: a completion's update of a key row (running, saturated) changes no indexed value, so
      // with room on its page it is a HOT update, which writes no index entries. Key rows are small.
      // The keys a claim may take from, least recently served first: keys with nothing waiting, or at
      // their limit, are not in it, however many there are.
      `CREATE INDEX flow_keys_ready_idx ON awa.flow_keys (queue, last_claimed_at)
        WHERE has_waiting AND NOT saturated`,
      // A keyed job that becomes available marks its key as having work. DO UPDATE locks the key row
      // even when nothing changes: a claim that holds it is waited for, so it cannot clear the flag
      // after missing this job. A statement's keys are taken in (queue, key) order, the order in which
      // lease deletions lock them too, so two statements over several keys cannot deadlock.
      `CREATE FUNCTION awa.flow_jobs_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT FROM inserted_jobs WHERE concurrency_key IS NOT NULL) THEN RETURN NULL; END IF;
        INSERT INTO awa.flow_keys AS f (queue, key)
        SELECT DISTINCT queue, concurrency_key FROM inserted_jobs
         WHERE concurrency_key IS NOT NULL AND state = 'available' ORDER BY 1, 2
        ON CONFLICT (queue, key) DO UPDATE SET has_waiting = true WHERE NOT f.has_waiting;
        RETURN NULL;
      END
      $fn$`,
      `CREATE TRIGGER jobs_flow_inserted AFTER INSERT ON awa.jobs REFERENCING NEW TABLE AS inserted_jobs
        FOR EACH STATEMENT EXECUTE FUNCTION awa.flow_jobs_inserted()`,
      // The same for a keyed job made available again (promotion, release, back-off): row by row, so
      // that the many updates of unkeyed jobs (every completion) pay nothing.
      `CREATE FUNCTION awa.flow_key_waiting() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO awa.flow_keys AS f (queue, key) VALUES (NEW.queue, NEW.concurrency_key)
          ON CONFLICT (queue, key) DO UPDATE SET has_waiting = true WHERE NOT f.has_waiting;
        RETURN NULL;
      END
      $fn$`,
      `CREATE TRIGGER jobs_flow_available AFTER UPDATE OF state ON awa.jobs FOR EACH ROW
        WHEN (NEW.concurrency_key IS NOT NULL AND NEW.state = 'available' AND OLD.state <> 'available')
        EXECUTE FUNCTION awa.flow_key_waiting()`,
      // Every path that ends an attempt deletes its lease: this gives the key's slot back. Key rows are
      // locked in (queue, key) order, so two statements freeing the same keys cannot deadlock.
      `CREATE FUNCTION awa.flow_leases_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        freed record;
        tids tid[];
        ns integer[];
      BEGIN
        IF NOT EXISTS (SELECT FROM old_leases WHERE concurrency_key IS NOT NULL) THEN RETURN NULL; END IF;
        SELECT array_agg(d.queue ORDER BY d.queue, d.key) AS qs, array_agg(d.key ORDER BY d.queue, d.key) AS ks,
               array_agg(d.n ORDER BY d.queue, d.key) AS ns
          INTO freed
          FROM (SELECT o.flow_queue AS queue, o.concurrency_key AS key, count(*)::int AS n
                  FROM old_leases o WHERE o.concurrency_key IS NOT NULL GROUP BY 1, 2) d;
        -- One primary-key lookup per key, in that order. Then the update by ctid (= ANY: a TID scan
        -- whatever the estimates), in a statement whose snapshot is younger than the locks: it sees the
        -- versions locked. A join with the key table could hash a sequential scan of every key row
        -- (dead versions included) on every completion.
        SELECT array_agg(k.ctid), array_agg(u.n) INTO tids, ns
          FROM unnest(freed.qs, freed.ks, freed.ns) AS u(queue, key, n) CROSS JOIN LATERAL (
            SELECT f.ctid FROM awa.flow_keys f WHERE f.queue = u.queue AND f.key = u.key LIMIT 1 FOR UPDATE
          ) k;
        UPDATE awa.flow_keys f SET running = greatest(f.running - u.n, 0), saturated = false
          FROM unnest(tids, ns) AS u(tid, n) WHERE f.ctid = ANY (tids) AND f.ctid = u.tid;
        RETURN NULL;
      END
      $fn$`,
      `CREATE TRIGGER active_leases_flow_deleted AFTER DELETE ON awa.active_leases
        REFERENCING OLD TABLE AS old_leases FOR EACH STATEMENT EXECUTE FUNCTION awa.flow_leases_deleted()`,
      CLAIM_FLOW_FUNCTION_V1,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP FUNCTION IF EXISTS awa.claim_flow(text, text[], integer, text, float8, integer, float8, integer, float8)',
      'DROP TRIGGER IF EXISTS active_leases_flow_deleted ON awa.active_leases',
      'DROP FUNCTION IF EXISTS awa.flow_leases_deleted()',
      'DROP TRIGGER IF EXISTS jobs_flow_available ON awa.jobs',
      'DROP TRIGGER IF EXISTS jobs_flow_inserted ON awa.jobs',
      'DROP FUNCTION IF EXISTS awa.flow_key_waiting()',
      'DROP FUNCTION IF EXISTS awa.flow_jobs_inserted()',
      'DROP TABLE IF EXISTS awa.flow_keys',
      'DROP INDEX IF EXISTS awa.jobs_flow_idx',
      `ALTER TABLE awa.queues DROP COLUMN IF EXISTS rate_n, DROP COLUMN IF EXISTS rate_at,
        DROP COLUMN IF EXISTS held_until`,
      'ALTER TABLE awa.active_leases DROP COLUMN IF EXISTS flow_queue, DROP COLUMN IF EXISTS concurrency_key',
      'ALTER TABLE awa.jobs DROP COLUMN IF EXISTS concurrency_key',
    ]);
  }
}
