import { executionAsyncResource } from 'node:async_hooks';

/**
 * How many AsyncLocalStorage slots an async resource made now (a timer) carries. On Node 20 and 22
 * an enabled AsyncLocalStorage copies its store onto every new async resource, promises included,
 * at a cost to every one of them; on Node 24 and later (AsyncContextFrame) this is 0 anyway.
 */
export const asyncStoreSlots = (): Promise<number> =>
  new Promise((resolve) =>
    setTimeout(() => {
      const resource = executionAsyncResource() as object;
      resolve(Object.getOwnPropertySymbols(resource).filter((s) => s.description === 'kResourceStore').length);
    }, 0),
  );
