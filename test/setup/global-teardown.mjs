export default async function globalTeardown() {
  const server = globalThis.__AWA_EMBEDDED_PG__;
  if (!server) return;
  // stop() never returns if the server already died; do not let that hang the run.
  await Promise.race([server.remove(), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
}
