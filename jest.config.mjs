/** Jest 30 + ts-jest in ESM mode (Nest 12 is ESM-only); run with NODE_OPTIONS=--experimental-vm-modules. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^nestjs-awa$': '<rootDir>/lib/index.ts',
    '^nestjs-awa/(testing|health|telemetry|dashboard)$': '<rootDir>/lib/$1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  testSequencer: '<rootDir>/test/setup/test-sequencer.mjs',
  globalSetup: '<rootDir>/test/setup/global-setup.mjs',
  globalTeardown: '<rootDir>/test/setup/global-teardown.mjs',
  testTimeout: 60_000,
  // Three on the 2-core CI machine: the suites wait on timers and PostgreSQL as much as they compute
  // (a full run took 525 s with two workers, 457 s with three, same machine and server).
  maxWorkers: 3,
  // A worker whose files are done exits once its event loop is empty: 1.36 to 1.48 s after Jest asks
  // it to on this 2-core machine under the suite's load (measured 5 December 2026), with no timer,
  // socket, connect or child process left 200 ms after its last file. Jest's default of 500 ms
  // force-killed such workers and printed its "failed to exit gracefully" leak warning. A leaked
  // handle (a pg pool's 10 s idle timer, a server, a reconnect loop) still outlasts 5 s and trips it.
  workerGracefulExitTimeout: 5_000,
  // A cache per checkout: a machine-wide one (/tmp/jest_*) shared with other checkouts and Node builds
  // once served a CommonJS transform of an ESM test ("exports is not defined").
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
