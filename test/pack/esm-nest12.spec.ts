import { describePackedApp } from './packed-app.suite.js';

/** An ESM app on Nest 12 + TypeORM 1.x: `import 'nestjs-awa'` loads the ESM build. */
describe('the packed tarball in an ESM app on Nest 12 and TypeORM 1.x', () => {
  describePackedApp({ name: 'esm-nest12', ext: '.mjs', entry: 'dist/lib/index.js' });
});
