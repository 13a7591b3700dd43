/** Texts of the test helpers (AwaTesting, from 'nestjs-awa/testing'): testing keeps its own, out of the core's. */
export const AwaTestingMessages = {
  testingOff: () =>
    'AwaTestingModule needs manual mode: set `testing: true` in AwaModule.forRoot({ ... }) (or return it from ' +
    "forRootAsync's useFactory) in the module that imports AwaTestingModule. Without it the background workers " +
    'would race the test for its jobs.',
  unknownQueue: (queue: string, known: readonly string[]) =>
    `no handler of this app runs queue "${queue}" (queues with handlers: ${known.join(', ') || 'none'})`,
  unhandledKind: (kind: string) => `no @JobHandler of this app handles kind "${kind}"`,
  notEnqueued: (wanted: string, enqueued: readonly string[], more: number) =>
    `expected ${wanted} to be enqueued (available or scheduled), but ` +
    (enqueued.length === 0
      ? 'no job is enqueued'
      : `the enqueued jobs are:\n${enqueued.map((line) => `  - ${line}`).join('\n')}` +
        (more > 0 ? `\n  ... and ${more} more` : '')),
  fireAtInvalid: () => 'expected a valid Date: the time to fire the schedules as of',
} as const;
