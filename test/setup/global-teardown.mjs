export default async function globalTeardown() {
  const pg = globalThis.__AWA_EMBEDDED_PG__;
  if (!pg) return;
  // stop() never returns if the server already died; do not let that hang the run.
  await Promise.race([pg.stop(), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
}
