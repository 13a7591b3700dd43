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
  maxWorkers: 2,
  // A cache per checkout: a machine-wide one (/tmp/jest_*) shared with other checkouts and Node builds
  // once served a CommonJS transform of an ESM test ("exports is not defined").
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
