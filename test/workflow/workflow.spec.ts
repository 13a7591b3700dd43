import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  EnqueueValidationError,
  JobHandler,
  MAX_GRAPH_JOBS,
  QueueAdmin,
  QueueProducer,
  type GraphJob,
  type Job,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';

/** The kinds each test's jobs ran, in the order they started. */
const ran: string[] = [];

@Injectable()
class Steps {
  @JobHandler('render')
  async render(job: Job<{ page: number }>) {
    ran.push(`render:${job.args.page}`);
    return { page: job.args.page };
  }

  @JobHandler('merge')
  async merge(job: Job) {
    ran.push('merge');
    const deps = await job.dependencyResults<{ page: number } | null>();
    return { deps: deps.map((d) => [d.ref, d.state, d.output?.page ?? null]) };
  }

  /** Returns nothing: its attempt ends by the plain completion, not the one that stores output. */
  @JobHandler('quiet')
  async quiet(job: Job<{ step: number }>) {
    ran.push(`quiet:${job.args.step}`);
  }

  @JobHandler('keyed.step', { queue: 'keyed' })
  async keyed() {
    ran.push('keyed');
  }

  @JobHandler('boom')
  async boom() {
    ran.push('boom');
    throw new Error('boom');
  }
}

/** Jobs that depend on jobs: declared as a graph or a tree, committed at once, run in dependency order. */
describe('workflows', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [Steps],
      awa: { queues: { ...FAST_OPTIONS.queues, keyed: { pollInterval: 200, keyConcurrency: 1 } } },
    });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  beforeEach(() => {
    ran.length = 0;
  });

  const stateOf = async (id: string) => (await producer.getJob(id))?.state;
  const settled = (ids: string[]) =>
    waitFor(async () => {
      const states = await Promise.all(ids.map(stateOf));
      return states.every((s) => s === 'completed' || s === 'failed' || s === 'cancelled') ? states : undefined;
    });

  it('a flow runs its children first, and the parent reads their outputs by ref', async () => {
    // Read inside the enqueueing transaction: once it commits, the children may run and the root finish
    // before the test looks.
    let rootState: string | undefined;
    const flow = await app.get(DataSource).transaction(async (manager) => {
      const enqueued = await producer.enqueueFlow(
        {
          kind: 'merge',
          args: {},
          children: [
            { kind: 'render', args: { page: 1 }, ref: 'p1' },
            { kind: 'render', args: { page: 2 }, ref: 'p2' },
          ],
        },
        { manager },
      );
      [{ state: rootState }] = await manager.query('SELECT state FROM awa.jobs WHERE id = $1', [enqueued.id]);
      return enqueued;
    });
    expect(rootState).toBe('waiting');
    await settled([flow.id]);
    expect(ran.indexOf('merge')).toBe(2);
    expect((await producer.getJob(flow.id))?.output).toEqual({
      deps: [
        ['p1', 'completed', 1],
        ['p2', 'completed', 2],
      ],
    });
    expect(Object.keys(flow.ids).sort()).toEqual(['p1', 'p2', 'root']);
  });

  it('a diamond graph runs each job after all of its dependencies', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'top', kind: 'render', args: { page: 0 } },
      { ref: 'left', kind: 'render', args: { page: 1 }, dependsOn: ['top'] },
      { ref: 'right', kind: 'render', args: { page: 2 }, dependsOn: ['top'] },
      { ref: 'bottom', kind: 'merge', args: {}, dependsOn: ['left', 'right'] },
    ]);
    expect(await settled(Object.values(graph.ids))).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(ran[0]).toBe('render:0');
    expect(ran[3]).toBe('merge');
  });

  it('a dependency whose handler returns nothing unblocks its dependents, batched with jobs in no workflow', async () => {
    // Jobs in no workflow complete by a statement without the workflow step (completeJobsOutsideWorkflows):
    // a batch that holds a workflow job must not.
    const plain = await producer.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ kind: 'quiet', args: { step: 100 + i } })),
    );
    const graph = await producer.enqueueGraph([
      { ref: 'a', kind: 'quiet', args: { step: 1 } },
      { ref: 'b', kind: 'quiet', args: { step: 2 }, dependsOn: ['a'] },
      { ref: 'c', kind: 'quiet', args: { step: 3 }, dependsOn: ['b'] },
    ]);
    expect(await settled([...plain.map((j) => j.id), graph.ids.c!])).toEqual(Array(21).fill('completed'));
    expect(ran.filter((r) => ['quiet:1', 'quiet:2', 'quiet:3'].includes(r))).toEqual(['quiet:1', 'quiet:2', 'quiet:3']);
  });

  it('a keyed job of a keyConcurrency queue is unblocked and runs like any other', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'a', kind: 'render', args: { page: 1 } },
      { ref: 'b', kind: 'keyed.step', args: {}, dependsOn: ['a'], concurrencyKey: 'tenant-1' },
    ]);
    expect(await settled([graph.ids.b!])).toEqual(['completed']);
  });

  describe('a dependency that fails, by policy', () => {
    const failing = async (policy: 'cancel' | 'fail' | 'ignore') => {
      const graph = await producer.enqueueGraph(
        [
          { ref: 'bad', kind: 'boom', args: {}, maxAttempts: 1 },
          { ref: 'next', kind: 'merge', args: {}, dependsOn: ['bad'] },
          { ref: 'last', kind: 'merge', args: {}, dependsOn: ['next'], onDependencyFailure: 'cancel' },
        ],
        { onDependencyFailure: policy },
      );
      return settled([graph.ids.bad!, graph.ids.next!, graph.ids.last!]);
    };
    it('cancel: the dependent and its own dependents end cancelled, never run', async () => {
      expect(await failing('cancel')).toEqual(['failed', 'cancelled', 'cancelled']);
      expect(ran).toEqual(['boom']);
    });
    it('fail: the dependent ends failed, and cascades by its dependents’ policies', async () => {
      expect(await failing('fail')).toEqual(['failed', 'failed', 'cancelled']);
      expect(ran).toEqual(['boom']);
    });
    it('ignore: the dependent runs and sees the failed dependency', async () => {
      expect(await failing('ignore')).toEqual(['failed', 'completed', 'completed']);
      expect(ran).toEqual(['boom', 'merge', 'merge']);
    });
  });

  it('cancelling a waiting job cancels its dependents; ignore lets them run', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'slow', kind: 'render', args: { page: 1 }, runAt: new Date(Date.now() + 3_600_000) },
      { ref: 'mid', kind: 'merge', args: {}, dependsOn: ['slow'] },
      { ref: 'end', kind: 'merge', args: {}, dependsOn: ['mid'] },
      { ref: 'tolerant', kind: 'merge', args: {}, dependsOn: ['mid'], onDependencyFailure: 'ignore' },
    ]);
    expect(await producer.cancel(graph.ids.mid!)).toEqual({ outcome: 'cancelled', previousState: 'waiting' });
    expect(await settled([graph.ids.mid!, graph.ids.end!, graph.ids.tolerant!])).toEqual([
      'cancelled',
      'cancelled',
      'completed',
    ]);
    expect((await producer.getJob(graph.ids.tolerant!))?.output).toEqual({ deps: [['mid', 'cancelled', null]] });
  });

  it('deleting a dependency resolves its dependents like a cancel', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'later', kind: 'render', args: { page: 1 }, runAt: new Date(Date.now() + 3_600_000) },
      { ref: 'after', kind: 'merge', args: {}, dependsOn: ['later'] },
    ]);
    await app.get(QueueAdmin).deleteJob(graph.ids.later!);
    expect(await settled([graph.ids.after!])).toEqual(['cancelled']);
  });

  describe("in the caller's transaction", () => {
    it('a rollback leaves no job and no edge of the graph', async () => {
      const dataSource = app.get(DataSource);
      let ids: Record<string, string> = {};
      await caught(() =>
        dataSource.transaction(async (manager) => {
          ids = (
            await producer.enqueueGraph(
              [
                { ref: 'a', kind: 'render', args: { page: 1 } },
                { ref: 'b', kind: 'merge', args: {}, dependsOn: ['a'] },
              ],
              { manager },
            )
          ).ids;
          throw new Error('roll back');
        }),
      );
      expect(Object.keys(ids)).toEqual(['a', 'b']);
      expect(await producer.getJob(ids.a!)).toBeNull();
      const [edges] = await dataSource.query(
        'SELECT count(*)::int AS n FROM awa.job_dependencies WHERE dependent_id = $1',
        [ids.b],
      );
      expect(edges.n).toBe(0);
    });

    it('a commit makes the whole graph visible and run', async () => {
      const graph = await app
        .get(DataSource)
        .transaction((manager) =>
          producer.enqueueFlow(
            { kind: 'merge', args: {}, children: [{ kind: 'render', args: { page: 7 } }] },
            { manager },
          ),
        );
      expect(await settled([graph.id])).toEqual(['completed']);
    });
  });

  describe('validation, before the database', () => {
    const refused = async (jobs: unknown, options?: object) => {
      const error = await caught(() => producer.enqueueGraph(jobs as GraphJob[], options));
      expect(error).toBeInstanceOf(EnqueueValidationError);
      return error as EnqueueValidationError;
    };
    it('an unknown ref in dependsOn names both refs', async () => {
      const error = await refused([{ ref: 'a', kind: 'render', args: {}, dependsOn: ['nope'] }]);
      expect(error.message).toContain('job "a" depends on "nope"');
      expect([error.field, error.index]).toEqual(['dependsOn', 0]);
    });
    it('a cycle names its refs', async () => {
      const error = await refused([
        { ref: 'a', kind: 'render', args: {}, dependsOn: ['c'] },
        { ref: 'b', kind: 'render', args: {}, dependsOn: ['a'] },
        { ref: 'c', kind: 'render', args: {}, dependsOn: ['b'] },
      ]);
      expect(error.message).toContain('"a" -> "c" -> "b" -> "a"');
    });
    it('a job depending on itself is a cycle', async () => {
      expect((await refused([{ ref: 'a', kind: 'render', args: {}, dependsOn: ['a'] }])).message).toContain('cycle');
    });
    it('a duplicate ref is named', async () => {
      const error = await refused([
        { ref: 'a', kind: 'render', args: {} },
        { ref: 'a', kind: 'render', args: {} },
      ]);
      expect([error.field, error.index, error.message]).toEqual(['ref', 1, expect.stringContaining('"a"')]);
    });
    it('an empty graph, a graph over MAX_GRAPH_JOBS, a debouncing unique job and a bad policy are refused', async () => {
      expect((await refused([])).field).toBe('jobs');
      const huge = Array.from({ length: MAX_GRAPH_JOBS + 1 }, (_, i) => ({ ref: `r${i}`, kind: 'render', args: {} }));
      expect((await refused(huge)).message).toContain(String(MAX_GRAPH_JOBS));
      const replace = { replace: true } as object;
      expect((await refused([{ ref: 'u', kind: 'render', args: {}, unique: replace }])).field).toBe('unique.replace');
      expect((await refused([{ ref: 'a', kind: 'render', args: {} }], { onDependencyFailure: 'skip' })).field).toBe(
        'onDependencyFailure',
      );
    });
    it('a bad enqueue option of a job carries its index', async () => {
      const error = await refused([
        { ref: 'a', kind: 'render', args: {} },
        { ref: 'b', kind: 'render', args: {}, priority: 1e9 },
      ]);
      expect([error.field, error.index]).toEqual(['priority', 1]);
    });
  });
});
