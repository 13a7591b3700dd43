import { describePackedApp } from './packed-app.suite.js';

/** A CommonJS app on Nest 11 + TypeORM 0.3, compiled by tsc to CommonJS: `require('nestjs-awa')` loads the CommonJS build. */
describe('the packed tarball in a CommonJS app on Nest 11 and TypeORM 0.3', () => {
  describePackedApp({ name: 'cjs-nest11', ext: '.js', entry: 'dist/cjs/lib/index.js' });
});
