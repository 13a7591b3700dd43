import { statement } from './sql-statement.js';

/** Statements on a connection itself: LISTEN, its statement timeout, ending another backend. */

/**
 * Ends the backend $1 of a connection the queue has given up on (its statement outlived
 * statementTimeout), so that the statement cannot still run, or commit, once its lock frees.
 */
export const terminateBackend = statement<[pid: number], { terminated: boolean }>(
  'terminate_backend',
  `SELECT pg_terminate_backend($1::int) AS terminated`,
);

/**
 * JIT off, in the settings of every transaction and session of the queue's own: its statements are
 * short, and PostgreSQL compiles a plan whose cost estimate passes jit_above_cost anew at each
 * execution. A lull's statistics inflate those estimates (a bloated index over a table taken for a
 * few rows): in a soak at 15,000 jobs/s each completion then compiled about 400 functions, 200 ms a
 * time, until the next ANALYZE (docs/capacity.md#jit-in-a-lull-5-december-2026).
 */
const JIT_OFF = (local: boolean) => `set_config('jit', 'off', ${local}) AS jit`;

/** statementTimeout ($1 ms, as text), and JIT off (JIT_OFF), for the rest of the current transaction only. */
export const setLocalStatementTimeout = statement<[ms: string], { statement_timeout: string; jit: string }>(
  'set_local_statement_timeout',
  `SELECT set_config('statement_timeout', $1::text, true) AS statement_timeout, ${JIT_OFF(true)}`,
);

/**
 * Limits ($1 statement_timeout, $2 lock_timeout, $3 idle_in_transaction_session_timeout; ms as
 * text, NULL: left as they are), and JIT off (JIT_OFF), for the rest of the current transaction only. The leader's fenced
 * transaction and its claim of the lease carry them, so that neither can hold or wait on the
 * leader row for ever.
 */
export const setLocalLimits = statement<
  [statementTimeout: string | null, lockTimeout: string | null, idleTimeout: string | null],
  { statement_timeout: string; lock_timeout: string; idle_in_transaction_session_timeout: string; jit: string }
>(
  'set_local_limits',
  `
  SELECT set_config('statement_timeout', coalesce($1::text, current_setting('statement_timeout')), true)
           AS statement_timeout,
         set_config('lock_timeout', coalesce($2::text, current_setting('lock_timeout')), true) AS lock_timeout,
         set_config('idle_in_transaction_session_timeout',
                    coalesce($3::text, current_setting('idle_in_transaction_session_timeout')), true)
           AS idle_in_transaction_session_timeout,
         ${JIT_OFF(true)}`,
);

/** The server's deadlock_timeout in ms: PostgreSQL cancels an autovacuum that blocks a lock request after it. */
export const deadlockTimeout = statement<[], { ms: number }>(
  'deadlock_timeout',
  `SELECT setting::int AS ms FROM pg_settings WHERE name = 'deadlock_timeout'`,
);

/**
 * The settings of the instance's claim connection (see ClaimConnection), for its whole session:
 * statement_timeout $1 (ms as text, '0': none), asynchronous commits (see NEXT_RUN_LEASE for why a
 * lost claim is safe), and no sequential or bitmap scans. A claim must read the claim index in
 * order and stop at its limit; a bitmap or sequential scan reads every waiting job and sorts them.
 * Statistics an ANALYZE took while few jobs waited made that look cheaper: in a soak at 15,000
 * jobs/s each claim then read the whole backlog (100 ms instead of 12), and the backlog grew to
 * 700,000 until the next ANALYZE. The session runs nothing but claims.
 * And one plan kept per connection (force_generic_plan): the claim's arrays are hidden from the
 * planner (unnestHidden), so every execution gets the same plan anyway, yet PostgreSQL's own choice
 * (auto) planned each claim afresh, 0.5-1.3 ms of the server's time (0.03-0.07 ms with the plan
 * kept). Small claims pay it most: in a drain at prefetch 0 (claims of about 11 jobs) a claim's round
 * trip fell from 0.97 / 1.23 ms to 0.82 / 1.05 ms at p50 (docs/performance.md, sitting U).
 * And JIT off (JIT_OFF).
 */
export const setClaimSession = statement<
  [statementTimeout: string],
  {
    statement_timeout: string;
    synchronous_commit: string;
    enable_seqscan: string;
    enable_bitmapscan: string;
    plan_cache_mode: string;
    jit: string;
  }
>(
  'set_claim_session',
  `
  SELECT set_config('statement_timeout', $1::text, false) AS statement_timeout,
         set_config('synchronous_commit', 'off', false) AS synchronous_commit,
         set_config('enable_seqscan', 'off', false) AS enable_seqscan,
         set_config('enable_bitmapscan', 'off', false) AS enable_bitmapscan,
         set_config('plan_cache_mode', 'force_generic_plan', false) AS plan_cache_mode,
         ${JIT_OFF(false)}`,
);

/**
 * The settings of the instance's lease connection (see LeaseConnection) and of the producer's
 * handoff connection (see HandoffConnection), for their whole session: statement_timeout $1 (ms as
 * text, '0': none) and JIT off (JIT_OFF). Their commits stay synchronous.
 */
export const setLeaseSession = statement<[statementTimeout: string], { statement_timeout: string; jit: string }>(
  'set_lease_session',
  `SELECT set_config('statement_timeout', $1::text, false) AS statement_timeout, ${JIT_OFF(false)}`,
);

/** LISTEN on one of the queue's channels (identifiers cannot be parameters; channels are constants). */
export const listen = (channel: string) =>
  statement<[]>(`listen_${channel}`, `LISTEN "${channel.replace(/"/g, '""')}"`);
