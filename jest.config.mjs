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
  globalSetup: '<rootDir>/test/setup/global-setup.mjs',
  globalTeardown: '<rootDir>/test/setup/global-teardown.mjs',
  testTimeout: 60_000,
  // Three on the 2-core CI machine: the suites wait on timers and PostgreSQL as much as they compute
  // (a full run took 525 s with two workers, 457 s with three, same machine and server).
  maxWorkers: 3,
  // A cache per checkout: a machine-wide one (/tmp/jest_*) shared with other checkouts and Node builds
  // once served a CommonJS transform of an ESM test ("exports is not defined").
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
