/**
 * What `run` throws, or what its promise rejects with. Throws itself when nothing was thrown, so a
 * test that expects a refusal fails on an accepted call instead of asserting on `undefined`.
 */
export async function caught(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw or a rejection, and the call succeeded');
}

/** `caught` for synchronous calls (the options resolver, forRoot). */
export function caughtSync(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, and the call succeeded');
}
