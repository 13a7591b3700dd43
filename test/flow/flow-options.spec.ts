import { AwaOptionError } from 'nestjs-awa';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { caughtSync } from '../support/caught.js';

/** The queue options of flow control: checked before anything starts, naming the option at fault. */
describe('flow control options', () => {
  const queue = (options: object) => resolveAwaOptions({ queues: { q: options } }).queues.get('q');

  it('resolves rateLimit and keyConcurrency, off by default', () => {
    expect(queue({})).toMatchObject({ rateLimit: null, keyConcurrency: 0 });
    expect(queue({ rateLimit: { limit: 100, period: 1_000 }, keyConcurrency: 5 })).toMatchObject({
      rateLimit: { limit: 100, period: 1_000 },
      keyConcurrency: 5,
    });
  });

  it.each([
    [{ rateLimit: { limit: 0, period: 1_000 } }, 'queues.q.rateLimit.limit'],
    [{ rateLimit: { limit: 1.5, period: 1_000 } }, 'queues.q.rateLimit.limit'],
    [{ rateLimit: { limit: 10 } }, 'queues.q.rateLimit.period'],
    [{ rateLimit: { limit: 10, period: 1_000, burst: 2 } }, 'queues.q.rateLimit.burst'],
    [{ rateLimit: 10 }, 'queues.q.rateLimit'],
    [{ keyConcurrency: -1 }, 'queues.q.keyConcurrency'],
    [{ keyConcurrency: 2.5 }, 'queues.q.keyConcurrency'],
  ])('refuses %j, naming %s', (options, path) => {
    const error = caughtSync(() => queue(options));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path });
  });
});
