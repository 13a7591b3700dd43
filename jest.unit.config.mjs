/**
 * The unit tier: pure logic, no database and no build. `npm run test:unit` runs it in seconds;
 * `npm test` runs it too (its files match the main config's testMatch).
 */
import base from './jest.config.mjs';

export default {
  ...base,
  testMatch: ['<rootDir>/test/unit/**/*.spec.ts'],
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 10_000,
};
