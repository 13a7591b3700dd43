import { AwaMessages } from '../../lib/awa.messages.js';
import { AwaError, AwaErrorCodes, AwaOptionError } from '../../lib/errors/index.js';
import type { AwaModuleOptions } from '../../lib/options/awa-options.interface.js';
import { checkAsyncOptions, resolveAsyncOptions, resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { nearestName } from '../../lib/util/nearest-name.js';
import { caughtSync } from '../support/caught.js';
import { QUEUE_OPTION_KEYS } from './queue-option-keys.js';

/** The resolver refuses unknown keys and bad values with an AwaOptionError naming the option's path. */
describe('options resolver', () => {
  const refusal = (options: unknown) => caughtSync(() => resolveAwaOptions(options as AwaModuleOptions));

  it.each<[string, unknown, string, string]>([
    ['a misspelt module option', { heartbeatIntreval: 1_000 }, 'heartbeatIntreval', 'heartbeatInterval'],
    [
      'a misspelt queue option',
      { queues: { reports: { deadlineDurtion: 0 } } },
      'queues.reports.deadlineDurtion',
      'deadlineDuration',
    ],
    [
      'a queue option of another library',
      { queues: { default: { localConcurrency: 2 } } },
      'queues.default.localConcurrency',
      'concurrency',
    ],
    ['a misspelt retention option', { retention: { complete: 0 } }, 'retention.complete', 'completed'],
    ['a differently cased option', { MigrationsRun: true }, 'MigrationsRun', 'migrationsRun'],
  ])('refuses %s, naming it and the nearest known option', (_what, options, path, nearest) => {
    const error = refusal(options);
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path,
      message: AwaMessages.invalidOption(path, `unknown option (did you mean \`${nearest}\`?)`),
    });
  });

  it('refuses an option no known one is close to, listing the known ones', () => {
    const error = refusal({ queues: { default: { limiter: { max: 10, duration: 1_000 } } } });
    expect(error).toBeInstanceOf(AwaOptionError);
    const nearest = nearestName('limiter', QUEUE_OPTION_KEYS)!;
    expect(nearest.close).toBe(false);
    expect(error).toMatchObject({
      path: 'queues.default.limiter',
      problem: AwaMessages.unknownOption(nearest.nearest, false, QUEUE_OPTION_KEYS),
    });
    expect((error as AwaOptionError).problem).toContain(`known: ${QUEUE_OPTION_KEYS.join(', ')})`);
  });

  it('refuses an unknown key even when its value is undefined', () => {
    expect(refusal({ shutdownTimout: undefined })).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path: 'shutdownTimout',
    });
  });

  it('accepts every documented key', () => {
    // The cron forms of the ticks exclude their ms intervals; the cron tests cover them.
    const every: Required<Omit<AwaModuleOptions, 'maintenanceCron' | 'orphanSweepCron' | 'scheduleCron'>> = {
      name: 'billing',
      dataSource: 'main',
      readDataSource: 'replica',
      queues: {
        default: {
          concurrency: 2,
          deadlineDuration: 0,
          maxAttempts: 3,
          retryBaseDelay: 10,
          retryMaxDelay: 20,
          pollInterval: 50,
          prefetch: 1,
          maxSnoozes: 0,
        },
      },
      heartbeatInterval: 1_000,
      heartbeatStaleAfter: 3_000,
      maintenanceInterval: 1_000,
      rescueBatchSize: 10,
      heartbeatBatchSize: 10,
      migrationsRun: true,
      shutdownTimeout: 0,
      maxArgsBytes: 1_000,
      orphanSweepInterval: 1_000,
      livenessProbe: 'heartbeat',
      connectionMode: 'direct',
      statementTimeout: 0,
      retention: { completed: 0, failed: 0 },
      jobEvents: {
        pollInterval: 100,
        leaseDuration: 1_000,
        batchSize: 10,
        retryBaseDelay: 10,
        retryMaxDelay: 20,
        retention: 0,
      },
      testing: true,
      maxOutputBytes: 100,
      maxProgressBytes: 100,
      schedules: [],
      scheduleInterval: 500,
    };
    expect(resolveAwaOptions(every)).toMatchObject({
      dataSource: 'main',
      livenessProbe: 'heartbeat',
      retention: { completed: 0, failed: 0 },
    });
  });

  it.each<[string, unknown, string]>([
    ['options that are not an object', 5, 'options'],
    ['a bad number', { heartbeatInterval: 0 }, 'heartbeatInterval'],
    ['a bad queue number', { queues: { q: { prefetch: -1 } } }, 'queues.q.prefetch'],
    ['a bad queue name', { queues: { 'a b': {} } }, 'queues.a b'],
    ['a bad enum', { connectionMode: 'pgbouncer' }, 'connectionMode'],
    ['a bad retention', { retention: 'forever' }, 'retention'],
    ['a bad jobEvents', { jobEvents: 5 }, 'jobEvents'],
    ['a bad jobEvents number', { jobEvents: { pollInterval: 0 } }, 'jobEvents.pollInterval'],
    ['an unknown jobEvents key', { jobEvents: { poll: 1 } }, 'jobEvents.poll'],
    ['a testing flag that is not a boolean', { testing: 'yes' }, 'testing'],
    ['a negative snooze cap', { queues: { q: { maxSnoozes: -1 } } }, 'queues.q.maxSnoozes'],
    ['a fractional snooze cap', { queues: { q: { maxSnoozes: 1.5 } } }, 'queues.q.maxSnoozes'],
    ['an output cap of 0', { maxOutputBytes: 0 }, 'maxOutputBytes'],
    ['a progress cap that is not a number', { maxProgressBytes: '8k' }, 'maxProgressBytes'],
  ])('refuses %s with an AwaOptionError, an AwaError of code AWA_INVALID_OPTION', (_what, options, path) => {
    const error = refusal(options);
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toBeInstanceOf(AwaError);
    expect(error).toMatchObject({ name: 'AwaOptionError', code: 'AWA_INVALID_OPTION', path });
    expect((error as AwaOptionError).message).toBe(AwaMessages.invalidOption(path, (error as AwaOptionError).problem));
  });

  it(
    'refuses a dataSource returned by the forRootAsync factory, which ' + 'would be ignored, and what is not an object',
    () => {
      const error = caughtSync(() => resolveAsyncOptions({ dataSource: 'other' }, { dataSource: 'main' }));
      expect(error).toBeInstanceOf(AwaOptionError);
      expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path: 'dataSource' });
      expect(caughtSync(() => resolveAsyncOptions(5 as never, { dataSource: 'main' }))).toMatchObject({
        code: AwaErrorCodes.invalidOption,
        path: 'options',
      });
      expect(resolveAsyncOptions({ migrationsRun: true }, { dataSource: 'main' })).toMatchObject({
        dataSource: 'main',
        migrationsRun: true,
      });
      expect(resolveAsyncOptions(undefined, {})).toMatchObject({ dataSource: undefined, migrationsRun: false });
    },
  );

  it('refuses forRootAsync options without a factory, or with an unknown key', () => {
    expect(caughtSync(() => checkAsyncOptions({} as never))).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path: 'useFactory',
    });
    const error = caughtSync(() => checkAsyncOptions({ useFactory: () => ({}), injects: [] } as never));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path: 'injects', problem: 'unknown option (did you mean `inject`?)' });
    expect(() =>
      checkAsyncOptions({ useFactory: () => ({}), inject: [], imports: [], dataSource: 'main' }),
    ).not.toThrow();
  });

  it("gives a named module only the queues it declares (the queue 'default' is the default module's)", () => {
    expect([...resolveAwaOptions({ name: 'billing', queues: { invoices: {} } }).queues.keys()]).toEqual(['invoices']);
    expect([...resolveAwaOptions({ queues: { invoices: {} } }).queues.keys()]).toEqual(['default', 'invoices']);
    expect(resolveAwaOptions({ name: 'billing', queues: { invoices: {} } })).toMatchObject({
      name: 'billing',
      readDataSource: undefined,
    });
    expect(caughtSync(() => resolveAwaOptions({ name: 'billing' }))).toMatchObject({
      path: 'queues',
      problem: AwaMessages.namedModuleWithoutQueues('billing'),
    });
  });

  it.each<[string, unknown, string]>([
    ['an empty name', { name: '' }, 'name'],
    ['a name with a space', { name: 'bill ing', queues: { q: {} } }, 'name'],
    ['a readDataSource that is not a name', { readDataSource: 5 }, 'readDataSource'],
  ])('refuses %s', (_what, options, path) => {
    expect(refusal(options)).toMatchObject({ code: AwaErrorCodes.invalidOption, path });
  });

  it('takes name and readDataSource on forRootAsync itself, and refuses them from the factory', () => {
    const own = { name: 'billing', dataSource: 'billingDb', readDataSource: 'replica' };
    expect(resolveAsyncOptions({ queues: { invoices: {} } }, own)).toMatchObject(own);
    for (const key of ['name', 'readDataSource'])
      expect(caughtSync(() => resolveAsyncOptions({ [key]: 'x' } as never, own))).toMatchObject({ path: key });
  });
});
