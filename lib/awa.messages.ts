/** Every message the library throws or logs, in one place. */
export const AwaMessages = {
  invalidOption: (path: string, problem: string) => `nestjs-awa: invalid option \`${path}\`: ${problem}.`,
  unknownOption: (nearest: string, close: boolean, known: readonly string[]) =>
    close
      ? `unknown option (did you mean \`${nearest}\`?)`
      : `unknown option (the nearest known one is \`${nearest}\`; known: ${known.join(', ')})`,
  scheduleModuleMissing: () =>
    'nestjs-awa: SchedulerRegistry is not available. Import ScheduleModule.forRoot() once in your root module ' +
    '(AwaModule does not import it itself, so your own cron jobs are not registered twice).',
  dataSourceMissing: (name: string) =>
    `nestjs-awa: no TypeORM DataSource named "${name}" was found. Import TypeOrmModule.forRoot(...) ` +
    'for it, or set the AwaModule option `dataSource` to the name you gave it.',
  notPostgres: (type: string) =>
    `nestjs-awa: the DataSource uses driver "${type}"; nestjs-awa needs PostgreSQL (type: 'postgres').`,
  entitiesMissing: (names: string[]) =>
    `nestjs-awa: the entities ${names.join(', ')} are not registered on the DataSource. ` +
    'Set `autoLoadEntities: true` in TypeOrmModule.forRoot(...), or add `...AwaEntities` to its `entities`.',
  schemaMissing: () =>
    'nestjs-awa: the "awa" schema is missing from the database: its migrations were not run. ' +
    'Add `...AwaMigrations` to your DataSource `migrations` and run them, or ' +
    'set the AwaModule option `migrationsRun: true`.',
  schemaOutdated: (missing: string[]) =>
    `nestjs-awa: the "awa" schema is out of date; migrations not applied: ${missing.join(', ')}. ` +
    'Run your migrations, or set the AwaModule option `migrationsRun: true`.',
  duplicateHandler: (kind: string, first: string, second: string) =>
    `nestjs-awa: two handlers for job kind "${kind}": ${first} and ${second}. Each kind has exactly one handler.`,
  handlerQueueUnknown: (handler: string, queue: string) =>
    `nestjs-awa: handler ${handler} is bound to queue "${queue}", which is not configured. ` +
    `Add it to the AwaModule option \`queues\` (e.g. queues: { ${JSON.stringify(queue)}: {} }).`,
  handlerKindInvalid: (handler: string) => `nestjs-awa: @JobHandler on ${handler} needs a non-empty kind string.`,
  loadedTwice: (formats: string[]) =>
    `nestjs-awa: both its ${formats.join(' and ')} builds were loaded in this process: each has its own AwaModule, ` +
    'QueueProducer and tokens, and Nest cannot inject one as the other. Load nestjs-awa one way only ' +
    '(import everywhere in an ESM app, require everywhere in a CommonJS app).',

  enqueueOptionUnknown: (key: string, nearest: string, close: boolean, known: readonly string[]) =>
    `nestjs-awa: unknown enqueue option \`${key}\` ` +
    (close
      ? `(did you mean \`${nearest}\`?).`
      : `(the nearest known one is \`${nearest}\`; known: ${known.join(', ')}).`),
  enqueueManagerInItem: () =>
    'nestjs-awa: `manager` is an option of enqueueMany itself, enqueueMany(items, { manager }), not of its items.',
  enqueueOptionsInvalid: () => 'nestjs-awa: enqueue options must be an object.',
  enqueueManyNotArray: () => 'nestjs-awa: enqueueMany takes an array of jobs, each { kind, args, ...options }.',
  enqueueItemInvalid: () => 'nestjs-awa: each enqueueMany item must be an object { kind, args, ...options }.',
  enqueueBatchTooLarge: (bytes: number, max: number) =>
    `nestjs-awa: this enqueue got ${Math.ceil(bytes / 1_048_576)} MiB of jobs; one call takes at most ` +
    `${max / 1_048_576} MiB (one statement). Split the batch; to keep it all or none, make the calls ` +
    'in one transaction with { manager }.',
  enqueueKindInvalid: () => 'nestjs-awa: enqueue needs a non-empty job kind string (at most 200 characters).',
  enqueueKindUnstorable: () => 'nestjs-awa: a job kind must not contain the NUL character or a lone UTF-16 surrogate.',
  enqueueQueueUnknown: (queue: string, known: string[]) =>
    `nestjs-awa: cannot enqueue into unknown queue "${queue}"; configured queues: ${known.join(', ')}.`,
  enqueueArgsInvalid: (reason: string) => `nestjs-awa: job args cannot be stored as JSON: ${reason}.`,
  enqueueArgsTooLarge: (bytes: number, limit: number) =>
    `nestjs-awa: job args are ${bytes} bytes as JSON; the limit is ${limit} bytes (option ` +
    `maxArgsBytes). Store large payloads elsewhere and pass a reference.`,
  enqueueRunAtInvalid: () => 'nestjs-awa: `runAt` must be a valid Date.',
  enqueuePriorityInvalid: (min: number, max: number) =>
    `nestjs-awa: \`priority\` must be an integer from ${min} to ${max} (lower runs first).`,
  enqueueMaxAttemptsInvalid: () => 'nestjs-awa: `maxAttempts` must be an integer of at least 1.',
  namedModuleWithoutQueues: (name: string) =>
    `module "${name}" declares no queue; a named module has only the queues of its option \`queues\` ` +
    "(the queue 'default' is the default module's)",
  moduleNameTaken: (name: string) =>
    `nestjs-awa: two AwaModules are named ${name}. Give each module of the app a name of its own.`,
  dataSourceShared: (first: string, second: string) =>
    `nestjs-awa: AwaModules ${first} and ${second} use the same DataSource. Each module needs a ` +
    'DataSource of its own (a database of its own); put the queues of both in one module instead.',
  queueInTwoModules: (first: string, second: string) =>
    `declared by both AwaModules ${first} and ${second}; a queue belongs to one module (one database): ` +
    'remove it from one of them',
  enqueueManagerOtherDatabase: (queue: string, module: string) =>
    `nestjs-awa: \`manager\` belongs to another DataSource than that of queue "${queue}" (AwaModule ${module}). ` +
    "Enqueue in a transaction of the queue's own DataSource, or without `manager`.",
  enqueueManySpansModules: (first: string, second: string) =>
    `nestjs-awa: enqueueMany takes jobs of one AwaModule (one database) per call; these go to queues of ` +
    `${first} and ${second}. Call it once per module.`,
  enqueueManagerInvalid: () =>
    'nestjs-awa: `manager` must be a TypeORM EntityManager of the same PostgreSQL DataSource.',

  statementTimedOut: (name: string, ms: number) =>
    `nestjs-awa: statement ${name} did not finish within statementTimeout (${ms} ms); it was stopped on the server.`,

  leaseLost: (id: string, kind: string, lease: string) =>
    `job ${id} (${kind}) finished, but its lease ${lease} was no longer ` +
    `held: it had been rescued. The result was discarded.`,
  handlerThrew: (id: string, kind: string, attempt: number, error: string) =>
    `job ${id} (${kind}) attempt ${attempt} failed: ${error}`,
  noHandlerForKind: (kind: string) => `no handler registered for kind "${kind}" on the instance that claimed it`,
  leaderAcquired: (instance: string) => `instance ${instance} is now the maintenance leader`,
  leaderLost: (instance: string, reason: string) => `instance ${instance} lost maintenance leadership: ${reason}`,
  /** A sweep task's rows: jobs rescued or promoted, finished jobs or idle keys deleted. */
  swept: (task: string, count: number) => `${task}: ${count} row(s)`,
  /** The leader analyzed a hot table whose planner statistics were far off its size. */
  reanalyzed: (table: string, planned: number, live: number) =>
    `planner statistics: analyzed awa.${table} (planned for ${planned} row(s), ${live} live)`,
  vacuumed: (table: string, dead: number, left: number) =>
    `hot table vacuum: vacuumed awa.${table} (${dead} dead row(s), ${left} left for open snapshots)`,
  /** A periodic tick (heartbeat, maintenance, leader election) failed; the next one tries again. */
  tickFailed: (what: string, error: string) => `${what} failed: ${error}`,
  /** Any other operation of the queue failed (a claim, a result write, a reconnect). */
  operationFailed: (what: string, error: string) => `${what} failed: ${error}`,
  sessionLost: (why: string) => `instance session lost (${why}); reconnecting`,
  sessionLostTooLong: (ms: number, count: number) =>
    `instance session lost for over ${ms} ms (heartbeatStaleAfter): aborting ` +
    `${count} handler(s), whose leases may have been rescued`,
  unhandledKind: (queue: string, kind: string, count: number) =>
    `${count} available job(s) of kind "${kind}" in queue "${queue}", and ` +
    `no live instance has a handler for that kind ` +
    "in that queue: they wait until one starts. Check the kind's spelling and the queue of its @JobHandler.",
  historyRotationHeld: (ring: string, ticks: number, lockTimeoutMs: number, deadlockTimeoutMs: number | undefined) =>
    `the history rotation of ring "${ring}" gave up ${ticks} ticks in a row: a session held its next segment ` +
    `for over ${lockTimeoutMs} ms each time (a long read of finished jobs, a pg_dump, an autovacuum of the segment). ` +
    'Until the ring moves, its finished jobs stay in awa.job_history past their retention. ' +
    (deadlockTimeoutMs !== undefined && deadlockTimeoutMs >= lockTimeoutMs
      ? `This server's deadlock_timeout is ${deadlockTimeoutMs} ms, and PostgreSQL cancels an autovacuum that blocks ` +
        `a lock only after it: set it below ${lockTimeoutMs} ms. `
      : '') +
    'See docs/storage.md.',
  shutdownTimeout: (count: number, ms: number) =>
    `${count} handler(s) still running after shutdownTimeout (${ms} ms); aborting them and releasing their jobs`,
} as const;

/** What the orphan rescue writes before the dead instance's id (appended in SQL). */
const INSTANCE_DIED_PREFIX = 'worker instance died: ';

/** Error texts written to a job's `errors` array by rescues and releases. */
export const RescueErrors = {
  heartbeatStale: 'heartbeat stale: worker presumed dead',
  deadlineExceeded: 'hard deadline exceeded',
  instanceDiedPrefix: INSTANCE_DIED_PREFIX,
  instanceDied: (id: string) => `${INSTANCE_DIED_PREFIX}${id}`,
  releasedOnShutdown: 'released on shutdown',
  releasedUnstarted:
    "released unstarted: it could not start in time (the prefetch buffer, or a rate limit's entry wait)",
  releasedHandoffBusy: 'released unstarted: handed to a worker that had no free slot by then',
  cancelled: 'cancelled by producer.cancel()',
} as const;

/** Reasons given to `job.signal.abort(reason)`. */
export const AbortReasons = {
  deadline: 'hard deadline exceeded',
  leaseLost: 'lease lost: the job was rescued by maintenance',
  shutdown: 'shutdown timeout: the job will be released',
  cancelled: 'cancelled by producer.cancel()',
} as const;

/** Why the health indicator reports an instance down. */
export const AwaHealthMessages = {
  shuttingDown: 'the application is shutting down',
  schemaNotVerified: 'the awa schema has not been verified (the module has not finished booting)',
  notStarted: 'the workers have not started yet',
  notConnected: (mode: 'direct' | 'transaction-pooler') =>
    mode === 'transaction-pooler'
      ? 'the database did not answer the last probe: it is unreachable'
      : 'the instance session is not connected (it reconnects with backoff)',
  claimLoopStalled: (queue: string, ms: number) => `the claim loop of queue "${queue}" has not ticked for ${ms} ms`,
} as const;

/** Messages of QueueAdmin's input checks (AdminValidationError), naming the field at fault. */
export const AdminMessages = {
  filterSpansModules: (first: string, second: string) =>
    `nestjs-awa: \`filter.queues\` names queues of AwaModules ${first} and ${second} (two databases); ` +
    'filter on the queues of one module per call.',
  notObject: (field: string) => `nestjs-awa: \`${field}\` must be a plain object.`,
  unknownKey: (field: string, key: string, nearest: string, close: boolean, known: readonly string[]) =>
    `nestjs-awa: unknown key \`${key}\` in \`${field}\` ` +
    (close
      ? `(did you mean \`${nearest}\`?).`
      : `(the nearest known one is \`${nearest}\`; known: ${known.join(', ')}).`),
  notArray: (field: string) => `nestjs-awa: \`${field}\` must be an array.`,
  tooMany: (field: string, max: number) => `nestjs-awa: \`${field}\` may hold at most ${max} values.`,
  badId: (field: string) => `nestjs-awa: \`${field}\` must be a job id: a string of digits that fits a bigint.`,
  badModule: (field: string, names: readonly string[]) =>
    `nestjs-awa: \`${field}\` must name an AwaModule of the app` +
    (names.length > 0 ? `: ${names.map((n) => `"${n}"`).join(', ')}` : ' (this app has no named module)') +
    '; leave it out for every module (the default one has no name).',
  badWorkflowId: (field: string) =>
    `nestjs-awa: \`${field}\` must be a workflow id (a UUID, as enqueueGraph returns it).`,
  badState: (field: string, value: string, states: readonly string[]) =>
    `nestjs-awa: \`${field}\` is "${value}", not a job state; states: ${states.join(', ')}.`,
  badText: (field: string, max: number) =>
    `nestjs-awa: \`${field}\` must be a non-empty string of at most ${max} characters, ` +
    'without the NUL character or a lone UTF-16 surrogate.',
  badArgs: (reason: string) => `nestjs-awa: \`filter.args\` cannot be matched as JSON: ${reason}.`,
  badDate: (field: string) => `nestjs-awa: \`${field}\` must be a valid Date.`,
  badLimit: (max: number) => `nestjs-awa: \`page.limit\` must be an integer from 1 to ${max}.`,
  badKeyLimit: (max: number) =>
    `nestjs-awa: \`limit\` must be null (back to the queue's keyConcurrency) or an integer from 0 to ${max}.`,
} as const;

/** Texts of the enqueue options `unique` and `tags`. */
export const UniqueMessages = {
  tagsInvalid: (max: number, maxLength: number) =>
    `nestjs-awa: \`tags\` must be an array of at most ${max} distinct non-empty strings of at most ` +
    `${maxLength} characters (no NUL character or lone UTF-16 surrogate).`,
  uniqueInvalid: () =>
    'nestjs-awa: `unique` must be an object { key?, byArgs?, byQueue?, period?, states?, replace? }.',
  keyInvalid: (maxLength: number) =>
    `nestjs-awa: \`unique.key\` must be a non-empty string of at most ${maxLength} characters ` +
    '(no NUL character or lone UTF-16 surrogate).',
  flagInvalid: (name: string) => `nestjs-awa: \`unique.${name}\` must be true or false.`,
  periodInvalid: () => 'nestjs-awa: `unique.period` must be a positive integer number of milliseconds.',
  statesInvalid: (required: readonly string[], optional: readonly string[]) =>
    `nestjs-awa: \`unique.states\` must be an array of job states that contains ${required.join(', ')} ` +
    `(a job blocks its duplicates from its enqueue until it finishes) and may add ${optional.join(', ')}.`,
  graphConflict: (ref: string | undefined, retry: boolean) =>
    `nestjs-awa: ${ref === undefined ? 'a unique job of the workflow' : `the unique job "${ref}" of the workflow`} ` +
    `conflicts with a job that holds its key; nothing of the workflow was ${retry ? 'retried' : 'enqueued'}.`,
  unresolved: (rounds: number) =>
    `nestjs-awa: a unique job conflicted with another ${rounds} times in a row, each time finishing ` +
    'before it could be read; nothing was enqueued for it. Try again.',
} as const;

/** Texts of snooze, progress and output: refusals thrown to the handler, and entries in a job's `errors`. */
export const JobValueMessages = {
  snoozeInvalid: (got: string, max: number) =>
    `nestjs-awa: job.snooze(ms) needs a finite number of milliseconds greater than 0 and at most ${max}, got ${got}.`,
  snoozeCapReached: (max: number) =>
    `snooze cap reached: the job already snoozed ${max} time(s), the most its queue allows (option maxSnoozes)`,
  progressInvalid: (reason: string) => `nestjs-awa: job.progress(value) needs a JSON value: ${reason}.`,
  progressTooLarge: (bytes: number, limit: number) =>
    `nestjs-awa: job.progress(value) got ${bytes} bytes of JSON; the limit is ${limit} bytes (option ` +
    'maxProgressBytes). Report a small summary (e.g. a percentage), not the data.',
  outputInvalid: (reason: string) => `output not stored: the handler's return value is not a JSON value: ${reason}`,
  outputTooLarge: (bytes: number, limit: number) =>
    `output not stored: the handler's return value is ${bytes} bytes as JSON; the limit is ${limit} bytes ` +
    '(option maxOutputBytes)',
  outputRefused: (error: string) => `output not stored: the database refused the handler's return value: ${error}`,
  notJson: (type: string) => `${type} is not a JSON value`,
  nul: 'strings must not contain the NUL character (\\u0000)',
  loneSurrogate: 'strings must not contain a lone UTF-16 surrogate (a string cut in the middle of a character)',
} as const;

/** Texts of periodic (cron) schedules and of the cron forms of the maintenance ticks. */
export const ScheduleMessages = {
  notAnObject: (got: string) => `expected a schedule object { name, cron, kind, ... }, got ${got}`,
  nameInvalid: () => 'a schedule name is a non-empty string of at most 200 characters',
  nameDuplicate: (name: string, first: string) => `schedule "${name}" is declared twice (first at ${first})`,
  cronInvalid: (cron: string, reason: string) =>
    `${JSON.stringify(cron)} is not a cron expression (${reason}); 5 fields (minute first) or 6 (second first)`,
  cronNeverFires: (cron: string) => `${JSON.stringify(cron)} never fires (no date matches it)`,
  timeZoneInvalid: (zone: string) => `${JSON.stringify(zone)} is not an IANA time zone (e.g. 'Europe/Berlin', 'UTC')`,
  missedInvalid: (got: string) => `expected 'skip', 'once' or 'all', got ${got}`,
  notFound: (name: string) => `nestjs-awa: no schedule named "${name}".`,
  periodicWithoutHandler: (method: string) =>
    `@Periodic on ${method} needs @JobHandler on the same method: it enqueues that handler's kind`,
  bothTimerForms: (interval: string, cron: string) =>
    `set either ${interval} (ms) or ${cron} (a cron expression), not both: they are two forms of one tick`,
  missedSkipped: (name: string, policy: string) =>
    `schedule "${name}": missed fires left out while catching up (missed: '${policy}'; 'all' keeps the latest 100)`,
  pruned: (names: readonly string[]) =>
    `removed schedule(s) that no live instance declares in code any more: ${names.map((n) => `"${n}"`).join(', ')}`,
  concurrencyKeyRequired: (name: string, queue: string) =>
    `schedule "${name}" enqueues into queue "${queue}", which has keyConcurrency and claims only jobs with a ` +
    "concurrency key, so none of its fires would ever run: add `concurrencyKey` to the schedule (each fire's job " +
    'carries it)',
  queueNotHandled: (name: string, kind: string, queue: string, handlerQueue: string) =>
    `schedule "${name}" enqueues "${kind}" into queue "${queue}", but this app handles "${kind}" in queue ` +
    `"${handlerQueue}", so nothing claims its jobs: set \`queue: '${handlerQueue}'\` or leave \`queue\` out ` +
    "(it defaults to the handler's queue)",
} as const;

/** Texts of flow control: rate limits, key concurrency and back-offs. */
export const FlowMessages = {
  concurrencyKeyInvalid: () =>
    'nestjs-awa: concurrencyKey must be a string of 1 to 200 characters, without the NUL character or a lone ' +
    'UTF-16 surrogate.',
  concurrencyKeyRequired: (queue: string) =>
    `nestjs-awa: queue "${queue}" has keyConcurrency, and claims only jobs with a concurrencyKey: give one.`,
  rateLimited: (retryAfterMs: number) => `rate limited: retry after ${retryAfterMs} ms`,
  retryAfterInvalid: (value: string) =>
    `nestjs-awa: retryAfterMs must be a finite number of ms from 0 to 2147483647, got ${value}`,
} as const;

/** Texts of durable job events (@OnJobEvent groups). */
export const JobEventMessages = {
  eventInvalid: (handler: string, event: unknown, known: readonly string[]) =>
    `@OnJobEvent on ${handler}: unknown event ${JSON.stringify(event)}; the events are ${known.join(', ')}`,
  groupInvalid: (handler: string) =>
    `@OnJobEvent on ${handler}: \`group\` must be a string of 1 to 100 letters, digits or . _ : -`,
  filterInvalid: (handler: string, field: string) =>
    `@OnJobEvent on ${handler}: \`${field}\` must be a non-empty array of non-empty strings (a kind may use * as a wildcard)`,
  duplicateGroup: (group: string, first: string, second: string) =>
    `@OnJobEvent group "${group}" is handled by both ${first} and ${second}: a group has one handler method, ` +
    'which may take several events',
  handlerFailed: (group: string, eventId: string, failures: number, retryInMs: number, error: string) =>
    `event group "${group}": handler failed on event ${eventId} (${failures} time(s) in a row), retrying it in ` +
    `${retryInMs} ms: ${error}`,
  deliveryFailed: (group: string, error: string) => `event group "${group}": delivery failed, retrying: ${error}`,
  leaseLost: (group: string) =>
    `event group "${group}": another instance took the group over (or it was replayed); this instance stops ` +
    'delivering it until it can claim it again',
  fromInvalid: () => 'from must be a valid Date',
  groupNameInvalid: () => 'group must be a string of 1 to 100 characters',
  moduleUnknown: (module: unknown, known: readonly string[]) =>
    `module ${JSON.stringify(module)} is no AwaModule of this app; the modules are ${known.join(', ')}`,
  groupInModules: (group: string, modules: readonly string[]) =>
    `event group "${group}" is stored in the databases of AwaModules ${modules.join(' and ')}: name the module ` +
    'whose event to skip (`{ module }`, null for the default module)',
} as const;
