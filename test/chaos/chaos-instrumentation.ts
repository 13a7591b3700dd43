/**
 * The chaos run's own record of what happened, in schema `chaos` of its private database:
 * - runs: written by handlers when they finish (job_id, attempt, run_lease, pid, at);
 * - events_seen: each delivery of a durable job event to the audit group (event_id, job_id, pid, at);
 * - claims: every lease row ever inserted (a trigger on awa.active_leases), with its instance, its
 *   claimed_at (the claim's own time, which its rate log counts) and when the row was written;
 * - lease_ends: every lease row deleted (completion, failure, release, rescue), so that the leases of a
 *   key held at once can be counted at any instant;
 * - transitions: every change of a job's state (a trigger on awa.jobs), with the run_lease then; a
 *   finished job's move into awa.job_history is one too (its old state: the deleted row's, in departures);
 * - instance_pids: which process each instance id belongs to (a trigger on awa.instances);
 * - waits: every change of a workflow step's dependency count (waiting_on), with the transaction and
 *   the start of the statement that made it, so a stranded step shows which decrements it got;
 * - event_deliveries: written by the durable-event group `chaos` for each event it handled.
 * Triggers write inside the library's own transactions, so the record is exact.
 */
export const INSTRUMENTATION_SQL = [
  'CREATE SCHEMA IF NOT EXISTS chaos',
  `CREATE TABLE chaos.runs (
     job_id bigint NOT NULL, attempt int NOT NULL, run_lease bigint NOT NULL, pid int NOT NULL,
     token uuid NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  'CREATE INDEX ON chaos.runs (token)',
  // chaos.counted jobs add 1 here, and note their attempt, inside job.transaction (docs/exactly-once.md).
  'CREATE TABLE chaos.counter (id int PRIMARY KEY, n bigint NOT NULL)',
  'INSERT INTO chaos.counter VALUES (1, 0)',
  'CREATE TABLE chaos.counted (job_id bigint NOT NULL, run_lease bigint NOT NULL)',
  `CREATE TABLE chaos.event_deliveries (
     event_id bigint NOT NULL, job_id bigint NOT NULL, event text NOT NULL, pid int NOT NULL, token uuid NOT NULL,
     at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  'CREATE INDEX ON chaos.event_deliveries (token)',
  `CREATE TABLE chaos.claims (
     job_id bigint NOT NULL, run_lease bigint NOT NULL, instance_id text NOT NULL, claimed_at timestamptz,
     at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE TABLE chaos.lease_ends (
     job_id bigint NOT NULL, run_lease bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE TABLE chaos.transitions (
     job_id bigint NOT NULL, run_lease bigint NOT NULL, attempt int NOT NULL, old_state text NOT NULL,
     new_state text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE TABLE chaos.departures (
     job_id bigint NOT NULL, state text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE TABLE chaos.instance_pids (
     instance_id text PRIMARY KEY, pid int NOT NULL, first_seen timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE FUNCTION chaos.log_claim() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.claims (job_id, run_lease, instance_id, claimed_at)
     VALUES (NEW.job_id, NEW.run_lease, NEW.instance_id, NEW.claimed_at);
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_claim AFTER INSERT ON awa.active_leases
     FOR EACH ROW EXECUTE FUNCTION chaos.log_claim()`,
  `CREATE FUNCTION chaos.log_lease_end() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.lease_ends (job_id, run_lease) VALUES (OLD.job_id, OLD.run_lease);
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_lease_end AFTER DELETE ON awa.active_leases
     FOR EACH ROW EXECUTE FUNCTION chaos.log_lease_end()`,
  `CREATE FUNCTION chaos.log_transition() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.transitions (job_id, run_lease, attempt, old_state, new_state)
     VALUES (NEW.id, NEW.run_lease, NEW.attempt, OLD.state, NEW.state);
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_transition AFTER UPDATE ON awa.jobs
     FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION chaos.log_transition()`,
  // A move deletes the row from awa.jobs, then inserts it into awa.job_history in the same statement:
  // the delete's row trigger fires first, so the insert's finds the state the job left.
  `CREATE FUNCTION chaos.log_departure() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.departures (job_id, state) VALUES (OLD.id, OLD.state);
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_departure AFTER DELETE ON awa.jobs FOR EACH ROW EXECUTE FUNCTION chaos.log_departure()`,
  `CREATE FUNCTION chaos.log_archived() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.transitions (job_id, run_lease, attempt, old_state, new_state)
     VALUES (NEW.id, NEW.run_lease, NEW.attempt,
             (SELECT d.state FROM chaos.departures d WHERE d.job_id = NEW.id ORDER BY d.at DESC LIMIT 1), NEW.state);
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_archived AFTER INSERT ON awa.job_history
     FOR EACH ROW EXECUTE FUNCTION chaos.log_archived()`,
  `CREATE TABLE chaos.waits (
     job_id bigint NOT NULL, old_n int NOT NULL, new_n int NOT NULL, old_state text NOT NULL, new_state text NOT NULL,
     txid bigint NOT NULL, query text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE FUNCTION chaos.log_wait() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.waits (job_id, old_n, new_n, old_state, new_state, txid, query)
     VALUES (NEW.id, OLD.waiting_on, NEW.waiting_on, OLD.state, NEW.state, txid_current(), left(current_query(), 60));
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_wait AFTER UPDATE ON awa.jobs
     FOR EACH ROW WHEN (OLD.waiting_on IS DISTINCT FROM NEW.waiting_on) EXECUTE FUNCTION chaos.log_wait()`,
  `CREATE FUNCTION chaos.log_instance() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     INSERT INTO chaos.instance_pids (instance_id, pid) VALUES (NEW.id, NEW.pid) ON CONFLICT DO NOTHING;
     RETURN NULL;
   END $fn$`,
  `CREATE TRIGGER chaos_log_instance AFTER INSERT OR UPDATE ON awa.instances
     FOR EACH ROW EXECUTE FUNCTION chaos.log_instance()`,
  // Instances that registered before the trigger existed.
  'INSERT INTO chaos.instance_pids (instance_id, pid) SELECT id, pid FROM awa.instances ON CONFLICT DO NOTHING',
];
