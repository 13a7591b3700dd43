// One worker instance in its own process, for the multi-process run of the bench. It uses the
// built package ('nestjs-awa' resolves to dist/), exactly as an app would.
// Env: BENCH_URL (database), BENCH_AWA_OPTIONS (JSON module options).
// Prints `READY <pid>` once booted, then `HANDLED <count>` whenever its handled count changed
// (checked every 5 ms, so the lines cost nothing next to the jobs). SIGTERM closes the app.
import { createBenchApp } from './support/bench.app.js';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const url = process.env.BENCH_URL;
  if (!url) throw new Error('BENCH_URL is not set');
  const { app, hooks } = await createBenchApp(url, JSON.parse(process.env.BENCH_AWA_OPTIONS ?? '{}'), true);
  let reported = 0;
  const timer = setInterval(() => {
    if (hooks.handled !== reported) {
      reported = hooks.handled;
      say(`HANDLED ${reported}`);
    }
  }, 5);
  const stop = () => {
    clearInterval(timer);
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  say(`READY ${process.pid}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
