import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Durable job events (docs/durable-events.md). A statement that changes a job writes an event row in
 * the same statement, but only for an (event, kind, queue) that some group subscribes to
 * (awa.event_subscriptions, written by every instance at boot). Each group reads the events after its
 * position in (tx, id) order: `tx` is the writing transaction's id, and a reader takes only events of
 * transactions older than its snapshot's xmin, so no event can commit later behind a position (a
 * bigserial alone commits out of order). A group's position row is also its lease: one instance at a
 * time delivers a group's events.
 */
export class AwaJobEvents1764900000200 implements MigrationInterface {
  name = 'AwaJobEvents1764900000200';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE TABLE awa.job_events (
        id      bigserial   NOT NULL,
        tx      xid8        NOT NULL DEFAULT pg_current_xact_id(),
        job_id  bigint      NOT NULL,
        event   text        NOT NULL,
        kind    text        NOT NULL,
        queue   text        NOT NULL,
        state   text        NOT NULL,
        attempt integer     NOT NULL,
        at      timestamptz NOT NULL DEFAULT now(),
        payload jsonb,
        PRIMARY KEY (tx, id)
      )`,
      // Replay finds the first event at or after a time.
      `CREATE INDEX job_events_at_idx ON awa.job_events (at)`,
      // kind_like: the kind pattern as a LIKE pattern ('*' any run of characters), so writers need no parsing.
      `CREATE TABLE awa.event_subscriptions (
        "group"    text        NOT NULL,
        event      text        NOT NULL,
        kind       text        NOT NULL DEFAULT '*',
        queue      text        NOT NULL DEFAULT '*',
        kind_like  text        NOT NULL DEFAULT '%',
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("group", event, kind, queue)
      )`,
      `CREATE INDEX event_subscriptions_event_idx ON awa.event_subscriptions (event)`,
      `CREATE TABLE awa.event_group_positions (
        "group"      text        PRIMARY KEY,
        position_tx  xid8        NOT NULL,
        position_id  bigint      NOT NULL DEFAULT 0,
        holder       text,
        lease_until  timestamptz,
        failures     integer     NOT NULL DEFAULT 0,
        last_error   text,
        failed_at    timestamptz,
        updated_at   timestamptz NOT NULL DEFAULT now()
      )`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP TABLE IF EXISTS awa.event_group_positions',
      'DROP TABLE IF EXISTS awa.event_subscriptions',
      'DROP TABLE IF EXISTS awa.job_events',
    ]);
  }
}
