export default async function globalTeardown() {
  await globalThis.__AWA_EMBEDDED_PG__?.stop();
}
