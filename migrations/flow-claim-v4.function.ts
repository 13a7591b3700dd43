/**
 * awa.claim_flow as migration AwaClaimWorkflowId installs it, frozen as shipped: a later change of the
 * claim is a new file (flow-claim-v5.function.ts) and a new migration, never an edit here. Earlier
 * versions: flow-claim-v1 to v3. What v4 changed: it also returns each claimed job's workflow_id (the
 * plain claim does too), so a handler's consumer span can carry its workflow without a read per job. The
 * return type changed, so the migration drops v3 and creates this one (CREATE OR REPLACE cannot).
 *
 * awa.claim_flow: the claim of a queue with flow control (a rate limit, a key concurrency limit, or a
 * hold set by job.rateLimit()). Claims up to p_want jobs of queue p_queue whose kind is in p_kinds for
 * instance p_instance, like the plain claim, and returns them; when it stopped for the rate limit or a
 * hold, a last row with a null id carries wait_ms, the time until the next attempt may start.
 *
 * In order, each a bound on the next:
 * 1. The queue's hold (held_until): nothing starts before it.
 * 2. The rate limit (p_rate_limit per p_period_ms, 0: none): a sliding log on the queue's row, locked
 *    FOR UPDATE, of (end, count) of recent claims, where a claim's end is t + its p_buffer_ms, the
 *    longest its worker lets a claimed job wait before its handler is entered (> 0 for a rate-limited
 *    queue): its jobs start in [t, end]. A claim takes at most limit minus the claims whose end is
 *    after t - period: a claim left out ended a whole period before t, so none of its starts shares a
 *    window [w, w + period) with this claim's, whatever p_buffer_ms each instance passed; every
 *    window of starts holds at most `limit`. t is clock_timestamp() read after the row lock, and written as attempted_at and
 *    the leases' claimed_at: the claims of one queue are serialized by the lock, so the stamps are in
 *    the order of the log.
 * 3. The key limit (p_key_limit running attempts per key, 0: no keys): the least recently served keys
 *    with waiting jobs and free slots are locked (SKIP LOCKED: another claim serves them), one job
 *    each per round, round-robin; then by priority. Each key's jobs are read from jobs_flow_idx, no more
 *    of them than its free slots and the rounds the batch can use (its size over the keys, plus one).
 *    The jobs are read in a second statement, so with a snapshot taken after the key rows were locked:
 *    it sees every lease and job committed before: a key whose jobs were all found (fewer than it read)
 *    and all taken, and that has no other available job (of another kind, or row-locked by another
 *    transaction), has nothing waiting, and leaves the index until a job of it becomes available.
 *    First, the queue's due keyed jobs (scheduled, retryable: run_at passed) become available, as the
 *    plain claim takes due jobs directly: else they would wait for the leader's promotion sweep. Their
 *    key rows are locked (and marked waiting) in (queue, key) order first, the order lease deletions
 *    lock them in, so the two cannot deadlock.
 */
/** The columns both branches of the claim return from the jobs they claimed (the keyed one adds the key). */
const CLAIMED_COLUMNS =
  'j.id, j.kind, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_lease, j.created_at, j.run_at, ' +
  'j.traceparent, j.workflow_id';

/** The claimed jobs as the function's rows (wait_ms null), from the CTE `claimed`. */
const CLAIMED_ROWS = `    SELECT c.id::text, c.kind, c.queue, c.args, c.attempt, c.max_attempts, c.priority, c.run_lease::text,
           (extract(epoch FROM c.created_at) * 1000)::float8, (extract(epoch FROM c.run_at) * 1000)::float8,
           c.traceparent, c.workflow_id::text, NULL::float8
      FROM claimed c;`;

export const CLAIM_FLOW_FUNCTION_V4 = `
CREATE OR REPLACE FUNCTION awa.claim_flow(
  p_queue text, p_kinds text[], p_want integer, p_instance text, p_deadline_ms float8,
  p_rate_limit integer, p_period_ms float8, p_key_limit integer, p_buffer_ms float8)
RETURNS TABLE (id text, kind text, queue text, args jsonb, attempt integer, max_attempts integer,
  priority smallint, run_lease text, created_ms float8, run_at_ms float8, traceparent text, workflow_id text,
  wait_ms float8)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  t timestamptz;
  -- A claim's entry counts while its end (t + its own p_buffer_ms) is within one period of t.
  period interval := p_period_ms * interval '1 millisecond';
  held timestamptz;
  log_at timestamptz[] := '{}';
  log_n integer[] := '{}';
  used integer := 0;
  take integer := p_want;
  taken integer := 0;
  keys text[];
  tids tid[];
  frees integer[];
  lims integer[];
  ns integer[];
  founds integer[];
  ids bigint[];
  os bigint[];
  due bigint[];
BEGIN
  IF p_rate_limit > 0 THEN
    SELECT q.held_until, q.rate_at, q.rate_n INTO held, log_at, log_n FROM awa.queues q
     WHERE q.name = p_queue FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO awa.queues (name) VALUES (p_queue) ON CONFLICT DO NOTHING;
      SELECT q.held_until, q.rate_at, q.rate_n INTO held, log_at, log_n FROM awa.queues q
       WHERE q.name = p_queue FOR UPDATE;
    END IF;
  ELSE
    SELECT q.held_until INTO held FROM awa.queues q WHERE q.name = p_queue;
  END IF;
  t := clock_timestamp();
  -- A paused queue (QueueAdmin.pauseQueue) starts nothing; resume NOTIFYs its workers.
  IF EXISTS (SELECT FROM awa.queues q WHERE q.name = p_queue AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  IF held > t THEN
    wait_ms := extract(epoch FROM held - t)::float8 * 1000; -- the wait row: every other column null
    RETURN NEXT;
    RETURN;
  END IF;
  IF p_rate_limit > 0 THEN
    SELECT coalesce(array_agg(l.a ORDER BY l.o), '{}'), coalesce(array_agg(l.n ORDER BY l.o), '{}'),
           coalesce(sum(l.n), 0)
      INTO log_at, log_n, used
      FROM unnest(log_at, log_n) WITH ORDINALITY AS l(a, n, o) WHERE l.a > t - period;
    take := least(p_want, p_rate_limit - used);
    IF take <= 0 THEN
      wait_ms := extract(epoch FROM (SELECT min(e) FROM unnest(log_at) e) + period - t)::float8 * 1000;
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;

  IF p_key_limit > 0 THEN
    due := ARRAY(SELECT d.id FROM (SELECT DISTINCT k.kind FROM unnest(p_kinds) AS k(kind)) k CROSS JOIN LATERAL (
                   SELECT j.id FROM awa.jobs j
                    WHERE j.state IN ('scheduled', 'retryable') AND j.run_at <= t AND j.queue = p_queue
                      AND j.kind = k.kind
                    ORDER BY j.run_at, j.id LIMIT p_want FOR UPDATE SKIP LOCKED) d);
    IF cardinality(due) > 0 THEN
      INSERT INTO awa.flow_keys AS f (queue, key)
      SELECT DISTINCT p_queue, j.concurrency_key FROM awa.jobs j
       WHERE j.id = ANY (due) AND j.concurrency_key IS NOT NULL ORDER BY 2
      ON CONFLICT (queue, key) DO UPDATE SET has_waiting = true WHERE NOT f.has_waiting;
      UPDATE awa.jobs j SET state = 'available' WHERE j.id = ANY (due);
    END IF;
    SELECT coalesce(array_agg(c.key ORDER BY c.last_claimed_at, c.key), '{}'),
           coalesce(array_agg(c.ctid ORDER BY c.last_claimed_at, c.key), '{}'),
           coalesce(array_agg(c.free ORDER BY c.last_claimed_at, c.key), '{}')
      INTO keys, tids, frees
      FROM (SELECT f.ctid, f.key, f.last_claimed_at, coalesce(f.max_running, p_key_limit) - f.running AS free
              FROM awa.flow_keys f
             WHERE f.queue = p_queue AND f.has_waiting AND NOT f.saturated
               AND (f.held_until IS NULL OR f.held_until <= t)
             ORDER BY f.last_claimed_at LIMIT take FOR UPDATE SKIP LOCKED) c;
    lims := ARRAY(SELECT least(f.v, (take + cardinality(keys) - 1) / greatest(cardinality(keys), 1) + 1)
                    FROM unnest(frees) WITH ORDINALITY AS f(v, o) ORDER BY f.o);
    ns := array_fill(0, ARRAY[cardinality(keys)]);
    founds := array_fill(0, ARRAY[cardinality(keys)]);
    SELECT coalesce(array_agg(r.id ORDER BY r.g), '{}'), coalesce(array_agg(r.o ORDER BY r.g), '{}')
      INTO ids, os
      FROM (SELECT p.id, p.o, row_number() OVER (ORDER BY p.rn, p.priority, p.o) AS g
              FROM (SELECT c.o, j.id, j.priority,
                           row_number() OVER (PARTITION BY c.o ORDER BY j.priority, j.run_at, j.id) AS rn
                      FROM unnest(keys, lims) WITH ORDINALITY AS c(key, lim, o) CROSS JOIN LATERAL (
                        SELECT j.id, j.priority, j.run_at FROM awa.jobs j
                         WHERE j.state = 'available' AND j.queue = p_queue AND j.concurrency_key = c.key
                           AND j.kind = ANY (p_kinds)
                         ORDER BY j.priority, j.run_at, j.id
                         LIMIT greatest(c.lim, 0) FOR UPDATE SKIP LOCKED) j) p) r;
    FOR i IN 1 .. cardinality(ids) LOOP
      founds[os[i]] := founds[os[i]] + 1;
      IF i <= take THEN ns[os[i]] := ns[os[i]] + 1; END IF;
    END LOOP;
    RETURN QUERY
    WITH claimed AS (
      UPDATE awa.jobs j
         SET state = 'running', attempt = j.attempt + 1, run_lease = j.run_lease + 1, attempted_at = t
       WHERE j.id = ANY (ids[1:take])
      RETURNING ${CLAIMED_COLUMNS}, j.concurrency_key
    ), leased AS (
      INSERT INTO awa.active_leases
        (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at, concurrency_key, flow_queue)
      SELECT c.id, c.run_lease, p_instance, t,
             CASE WHEN p_deadline_ms > 0 THEN t + p_deadline_ms * interval '1 millisecond' END, t, c.concurrency_key,
             c.queue
        FROM claimed c
    )
${CLAIMED_ROWS}
    GET DIAGNOSTICS taken = ROW_COUNT;
    -- The key rows as locked above, by ctid (= ANY: a TID scan whatever the estimates; a join could
    -- hash a sequential scan of every key row). This transaction changed none of them since, and this
    -- statement's snapshot is younger than the locks. A key whose jobs were all found and taken may
    -- still have available jobs this claim could not see: of kinds it does not handle, or row-locked
    -- by another transaction (SKIP LOCKED). One probe of jobs_flow_idx tells (it sees them whatever
    -- their kind or lock, and not the jobs just claimed): such a key stays waiting, and goes to the
    -- back of the round-robin, so that keys this claim cannot serve do not take its places.
    UPDATE awa.flow_keys f
       SET running = f.running + s.n,
           last_claimed_at = CASE WHEN s.n > 0 OR s.unseen THEN t ELSE f.last_claimed_at END,
           has_waiting = CASE WHEN s.lim <= 0 THEN f.has_waiting ELSE s.found >= s.lim OR s.found > s.n OR s.unseen END,
           saturated = f.running + s.n >= coalesce(f.max_running, p_key_limit)
      FROM (SELECT u.tid, u.lim, u.n, u.found,
                   CASE WHEN u.lim > 0 AND u.found < u.lim AND u.found = u.n THEN EXISTS (
                     SELECT FROM awa.jobs j
                      WHERE j.state = 'available' AND j.queue = p_queue AND j.concurrency_key = u.key)
                   ELSE false END AS unseen
              FROM unnest(tids, keys, lims, ns, founds) AS u(tid, key, lim, n, found)) s
     WHERE f.ctid = ANY (tids) AND f.ctid = s.tid;
  ELSE
    RETURN QUERY
    WITH kinds AS (
      SELECT DISTINCT k.kind FROM unnest(p_kinds) AS k(kind)
    ), available AS (
      SELECT a.id, a.priority, a.run_at FROM kinds k CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at FROM awa.jobs j
         WHERE j.state = 'available' AND j.queue = p_queue AND j.kind = k.kind
         ORDER BY j.priority, j.run_at, j.id
         LIMIT take FOR UPDATE SKIP LOCKED
      ) a
    ), due AS (
      SELECT d.id, d.priority, d.run_at FROM kinds k CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at FROM awa.jobs j
         WHERE j.state IN ('scheduled', 'retryable') AND j.run_at <= t AND j.queue = p_queue AND j.kind = k.kind
         ORDER BY j.run_at, j.id
         LIMIT take FOR UPDATE SKIP LOCKED
      ) d
    ), picked AS (
      SELECT c.id FROM (SELECT * FROM available UNION ALL SELECT * FROM due) c
       ORDER BY c.priority, c.run_at, c.id LIMIT take
    ), claimed AS (
      UPDATE awa.jobs j
         SET state = 'running', attempt = j.attempt + 1, run_lease = j.run_lease + 1, attempted_at = t
       WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p))
      RETURNING ${CLAIMED_COLUMNS}
    ), leased AS (
      INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at)
      SELECT c.id, c.run_lease, p_instance, t,
             CASE WHEN p_deadline_ms > 0 THEN t + p_deadline_ms * interval '1 millisecond' END, t
        FROM claimed c
    )
${CLAIMED_ROWS}
    GET DIAGNOSTICS taken = ROW_COUNT;
  END IF;

  IF p_rate_limit > 0 AND taken > 0 THEN
    log_at := log_at || (t + p_buffer_ms * interval '1 millisecond');
    log_n := log_n || taken;
    UPDATE awa.queues q SET rate_at = log_at, rate_n = log_n WHERE q.name = p_queue;
    IF used + taken >= p_rate_limit THEN
      wait_ms := extract(epoch FROM (SELECT min(e) FROM unnest(log_at) e) + period - t)::float8 * 1000;
      RETURN NEXT;
    END IF;
  END IF;
  RETURN;
END
$fn$`;
