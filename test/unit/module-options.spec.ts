import { AwaErrorCodes, AwaModule, AwaOptionError, type AwaModuleOptions } from 'nestjs-awa';
import { AwaMessages } from '../../lib/awa.messages.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { caughtSync } from '../support/caught.js';
import { QUEUE_OPTION_KEYS } from './queue-option-keys.js';

/** Bad options fail at boot (forRoot) with an AwaOptionError whose `path` names the option. */
describe('module options', () => {
  const cases: Array<[string, AwaModuleOptions, string, string]> = [
    ['a zero interval', { heartbeatInterval: 0 }, 'heartbeatInterval', 'must be greater than 0, got 0'],
    ['a negative interval', { maintenanceInterval: -5 }, 'maintenanceInterval', 'must be greater than 0, got -5'],
    ['NaN', { orphanSweepInterval: NaN }, 'orphanSweepInterval', 'expected a number, got NaN'],
    ['Infinity', { shutdownTimeout: Infinity }, 'shutdownTimeout', 'expected a finite number, got Infinity'],
    [
      'a string number',
      { heartbeatInterval: '100' as unknown as number },
      'heartbeatInterval',
      'expected a number, got "100"',
    ],
    [
      'stale-after not above the interval',
      { heartbeatInterval: 1_000, heartbeatStaleAfter: 1_000 },
      'heartbeatStaleAfter',
      'must be greater than heartbeatInterval (1000), or every live lease would look stale; got 1000',
    ],
    [
      'concurrency 0',
      { queues: { default: { concurrency: 0 } } },
      'queues.default.concurrency',
      'must be greater than 0, got 0',
    ],
    [
      'fractional concurrency',
      { queues: { q: { concurrency: 1.5 } } },
      'queues.q.concurrency',
      'expected an integer, got 1.5',
    ],
    [
      'a negative deadline',
      { queues: { reports: { deadlineDuration: -1 } } },
      'queues.reports.deadlineDuration',
      'must not be negative, got -1',
    ],
    ['maxAttempts 0', { queues: { q: { maxAttempts: 0 } } }, 'queues.q.maxAttempts', 'must be greater than 0, got 0'],
    [
      'retry cap below base',
      { queues: { q: { retryBaseDelay: 10, retryMaxDelay: 5 } } },
      'queues.q.retryMaxDelay',
      'must be at least retryBaseDelay (10)',
    ],
    [
      'a queue name with SQL',
      { queues: { "x'; drop table awa.jobs; --": {} } },
      "queues.x'; drop table awa.jobs; --",
      'a queue name is 1-100 characters of letters, digits, _ . : -',
    ],
    ['a queue given as a number', { queues: { q: 5 as unknown as object } }, 'queues.q', 'expected an object, got 5'],
    [
      'queues as an array',
      { queues: [] as unknown as Record<string, object> },
      'queues',
      'expected an object of queue name -> options, got object',
    ],
    ['a negative prefetch', { queues: { q: { prefetch: -1 } } }, 'queues.q.prefetch', 'must not be negative, got -1'],
    ['batch size 0', { rescueBatchSize: 0 }, 'rescueBatchSize', 'must be greater than 0, got 0'],
    ['heartbeat batch fractional', { heartbeatBatchSize: 2.5 }, 'heartbeatBatchSize', 'expected an integer, got 2.5'],
    [
      'migrationsRun as a string',
      { migrationsRun: 'yes' as unknown as boolean },
      'migrationsRun',
      'expected a boolean, got "yes"',
    ],
    [
      'an unknown liveness probe',
      { livenessProbe: 'ping' as 'session' },
      'livenessProbe',
      `expected 'session' or 'heartbeat', got "ping"`,
    ],
    [
      'an unknown connection mode',
      { connectionMode: 'pgbouncer' as 'direct' },
      'connectionMode',
      `expected 'direct' or 'transaction-pooler', got "pgbouncer"`,
    ],
    [
      'the session probe behind a transaction pooler',
      { connectionMode: 'transaction-pooler', livenessProbe: 'session' },
      'livenessProbe',
      "'session' needs a session of its own, which a transaction-mode pooler does not keep; with " +
        "connectionMode 'transaction-pooler' leave it out (it is 'heartbeat')",
    ],
    ['a negative retention', { retention: { completed: -1 } }, 'retention.completed', 'must not be negative, got -1'],
    ['an empty data source name', { dataSource: '' }, 'dataSource', 'expected a DataSource name, got ""'],
    ['a negative statement timeout', { statementTimeout: -1 }, 'statementTimeout', 'must not be negative, got -1'],
    ['a fractional statement timeout', { statementTimeout: 0.5 }, 'statementTimeout', 'expected an integer, got 0.5'],
    // JavaScript users and configs read from files have no type checker: unknown keys fail too.
    [
      'an option of another queue library',
      { queues: { default: { localConcurrency: 2 } as object } },
      'queues.default.localConcurrency',
      AwaMessages.unknownOption('concurrency', true, []),
    ],
    [
      'a misspelt queue option',
      { queues: { reports: { deadlineDurtion: 1_000 } as object } },
      'queues.reports.deadlineDurtion',
      AwaMessages.unknownOption('deadlineDuration', true, []),
    ],
    [
      'a misspelt module option',
      { heartbeatIntervall: 1_000 } as AwaModuleOptions,
      'heartbeatIntervall',
      AwaMessages.unknownOption('heartbeatInterval', true, []),
    ],
    [
      'a misspelt retention option',
      { retention: { complete: 0 } as object },
      'retention.complete',
      AwaMessages.unknownOption('completed', true, []),
    ],
    [
      'a handoff that is not a boolean nor eager',
      { queues: { default: { handoff: 'yes' as unknown as boolean } } },
      'queues.default.handoff',
      `expected a boolean or 'eager', got "yes"`,
    ],
    [
      'an eager handoff on a rate-limited queue',
      { queues: { default: { handoff: 'eager', rateLimit: { limit: 1, period: 1_000 } } } },
      'queues.default.handoff',
      'cannot be combined with rateLimit or keyConcurrency',
    ],
    [
      'an eager handoff behind a transaction pooler',
      { connectionMode: 'transaction-pooler', queues: { default: { handoff: 'eager' } } },
      'queues.default.handoff',
      "needs connectionMode 'direct' (no LISTEN behind a pooler)",
    ],
    [
      'a handoff on a rate-limited queue (the claim enforces the limit; a handed job skips it)',
      { queues: { default: { handoff: true, rateLimit: { limit: 1, period: 1_000 } } } },
      'queues.default.handoff',
      'cannot be combined with rateLimit or keyConcurrency',
    ],
    [
      'a handoff on a keyed queue',
      { queues: { keyed: { handoff: true, keyConcurrency: 1 } } },
      'queues.keyed.handoff',
      'cannot be combined with rateLimit or keyConcurrency',
    ],
    [
      'a handoff behind a transaction pooler (no LISTEN there)',
      { connectionMode: 'transaction-pooler', queues: { default: { handoff: true } } },
      'queues.default.handoff',
      "needs connectionMode 'direct' (no LISTEN behind a pooler)",
    ],
  ];

  it.each(cases)('rejects %s, naming the option', (_what, options, path, problem) => {
    const error = caughtSync(() => AwaModule.forRoot(options));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path,
      problem,
      message: AwaMessages.invalidOption(path, problem),
    });
  });

  it('rejects an unknown queue option no known one is close to, naming the nearest and listing the known ones', () => {
    const error = caughtSync(() =>
      AwaModule.forRoot({ queues: { default: { limiter: { max: 10, duration: 1_000 } } as object } }),
    );
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path: 'queues.default.limiter',
      problem: AwaMessages.unknownOption('rateLimit', false, QUEUE_OPTION_KEYS),
    });
  });

  it('fills in the documented defaults', () => {
    const o = resolveAwaOptions({ queues: { reports: { deadlineDuration: 0 } } });
    expect(o).toMatchObject({
      heartbeatInterval: 30_000,
      heartbeatStaleAfter: 90_000,
      maintenanceInterval: 30_000,
      rescueBatchSize: 500,
      heartbeatBatchSize: 500,
      migrationsRun: false,
      shutdownTimeout: 30_000,
      orphanSweepInterval: 5_000,
      livenessProbe: 'session',
      connectionMode: 'direct',
      statementTimeout: 30_000,
      retention: { completed: 86_400_000, failed: 604_800_000 },
      maxOutputBytes: 65_536,
      maxProgressBytes: 8_192,
    });
    expect(o.queues.get('default')).toEqual({
      name: 'default',
      concurrency: 10,
      deadlineDuration: 300_000,
      maxAttempts: 25,
      retryBaseDelay: 1_000,
      retryMaxDelay: 86_400_000,
      pollInterval: 1_000,
      prefetch: 0,
      maxSnoozes: 100,
      rateLimit: null,
      keyConcurrency: 0,
      handoff: true,
    });
    expect(o.queues.get('reports')?.deadlineDuration).toBe(0);
  });

  it('turns handoff off by default where it cannot hold: with rateLimit, with keyConcurrency, behind a transaction pooler', () => {
    const handoffOf = (options: AwaModuleOptions, queue = 'default') =>
      resolveAwaOptions(options).queues.get(queue)?.handoff;
    expect(handoffOf({})).toBe(true);
    expect(handoffOf({ queues: { default: { handoff: false } } })).toBe(false);
    expect(handoffOf({ queues: { default: { handoff: 'eager' } } })).toBe('eager');
    expect(handoffOf({ queues: { default: { rateLimit: { limit: 1, period: 1_000 } } } })).toBe(false);
    expect(handoffOf({ queues: { keyed: { keyConcurrency: 2 } } }, 'keyed')).toBe(false);
    expect(handoffOf({ connectionMode: 'transaction-pooler' })).toBe(false);
  });

  it('implies the heartbeat liveness probe behind a transaction pooler', () => {
    expect(resolveAwaOptions({ connectionMode: 'transaction-pooler' })).toMatchObject({
      connectionMode: 'transaction-pooler',
      livenessProbe: 'heartbeat',
    });
  });

  it('rejects forRootAsync without a factory', () => {
    const error = caughtSync(() => AwaModule.forRootAsync({} as never));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path: 'useFactory' });
  });

  it('rejects an unknown forRootAsync key, naming the nearest known one', () => {
    const error = caughtSync(() => AwaModule.forRootAsync({ useFactory: () => ({}), injects: [] } as never));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path: 'injects',
      problem: AwaMessages.unknownOption('inject', true, []),
    });
  });
});
