import { AwaModule, type AwaModuleOptions } from 'nestjs-awa';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';

/** Bad options fail at boot (forRoot), with a message that names the option. */
describe('module options', () => {
  const cases: Array<[string, AwaModuleOptions, RegExp]> = [
    ['a zero interval', { heartbeatInterval: 0 }, /`heartbeatInterval`: must be greater than 0/],
    ['a negative interval', { maintenanceInterval: -5 }, /`maintenanceInterval`: must be greater than 0/],
    ['NaN', { orphanSweepInterval: NaN }, /`orphanSweepInterval`: expected a number, got NaN/],
    ['Infinity', { shutdownTimeout: Infinity }, /`shutdownTimeout`: expected a finite number/],
    ['a string number', { heartbeatInterval: '100' as unknown as number }, /`heartbeatInterval`: expected a number, got "100"/],
    ['stale-after not above the interval', { heartbeatInterval: 1_000, heartbeatStaleAfter: 1_000 },
      /`heartbeatStaleAfter`: must be greater than heartbeatInterval \(1000\)/],
    ['concurrency 0', { queues: { default: { concurrency: 0 } } }, /`queues\.default\.concurrency`: must be greater than 0/],
    ['fractional concurrency', { queues: { q: { concurrency: 1.5 } } }, /`queues\.q\.concurrency`: expected an integer/],
    ['a negative deadline', { queues: { reports: { deadlineDuration: -1 } } }, /`queues\.reports\.deadlineDuration`: must not be negative/],
    ['maxAttempts 0', { queues: { q: { maxAttempts: 0 } } }, /`queues\.q\.maxAttempts`: must be greater than 0/],
    ['retry cap below base', { queues: { q: { retryBaseDelay: 10, retryMaxDelay: 5 } } }, /`queues\.q\.retryMaxDelay`: must be at least retryBaseDelay/],
    ['a queue name with SQL', { queues: { "x'; drop table awa.jobs; --": {} } }, /`queues\.x'; drop table awa\.jobs; --`: a queue name is/],
    ['a queue given as a number', { queues: { q: 5 as unknown as object } }, /`queues\.q`: expected an object/],
    ['queues as an array', { queues: [] as unknown as Record<string, object> }, /`queues`: expected an object/],
    ['a negative prefetch', { queues: { q: { prefetch: -1 } } }, /`queues\.q\.prefetch`: must not be negative/],
    ['batch size 0', { rescueBatchSize: 0 }, /`rescueBatchSize`: must be greater than 0/],
    ['heartbeat batch fractional', { heartbeatBatchSize: 2.5 }, /`heartbeatBatchSize`: expected an integer/],
    ['migrationsRun as a string', { migrationsRun: 'yes' as unknown as boolean }, /`migrationsRun`: expected a boolean/],
    ['an unknown liveness probe', { livenessProbe: 'ping' as 'session' }, /`livenessProbe`: expected 'session' or 'heartbeat'/],
    ['an unknown connection mode', { connectionMode: 'pgbouncer' as 'direct' }, /`connectionMode`: expected 'direct' or 'transaction-pooler', got "pgbouncer"/],
    ['the session probe behind a transaction pooler', { connectionMode: 'transaction-pooler', livenessProbe: 'session' },
      /`livenessProbe`: 'session' needs a session of its own/],
    ['a negative retention', { retention: { completed: -1 } }, /`retention\.completed`: must not be negative/],
    ['an empty data source name', { dataSource: '' }, /`dataSource`: expected a DataSource name/],
    ['a negative statement timeout', { statementTimeout: -1 }, /`statementTimeout`: must not be negative/],
    ['a fractional statement timeout', { statementTimeout: 0.5 }, /`statementTimeout`: expected an integer/],
  ];

  it.each(cases)('rejects %s, naming the option', (_what, options, message) => {
    expect(() => AwaModule.forRoot(options)).toThrow(message);
  });

  it('fills in the documented defaults', () => {
    const o = resolveAwaOptions({ queues: { reports: { deadlineDuration: 0 } } });
    expect(o).toMatchObject({
      heartbeatInterval: 30_000, heartbeatStaleAfter: 90_000, maintenanceInterval: 30_000, rescueBatchSize: 500,
      heartbeatBatchSize: 500, migrationsRun: false, shutdownTimeout: 30_000, orphanSweepInterval: 5_000,
      livenessProbe: 'session', connectionMode: 'direct', statementTimeout: 30_000, retention: { completed: 86_400_000, failed: 604_800_000 },
    });
    expect(o.queues.get('default')).toEqual({
      name: 'default', concurrency: 10, deadlineDuration: 300_000, maxAttempts: 25, retryBaseDelay: 1_000,
      retryMaxDelay: 86_400_000, pollInterval: 1_000, prefetch: 0,
    });
    expect(o.queues.get('reports')?.deadlineDuration).toBe(0);
  });

  it('implies the heartbeat liveness probe behind a transaction pooler', () => {
    expect(resolveAwaOptions({ connectionMode: 'transaction-pooler' })).toMatchObject({
      connectionMode: 'transaction-pooler', livenessProbe: 'heartbeat',
    });
  });

  it('rejects forRootAsync without a factory', () => {
    expect(() => AwaModule.forRootAsync({} as never)).toThrow(/`useFactory`/);
  });
});
