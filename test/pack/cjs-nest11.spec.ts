import { describePackedApp } from './packed-app.suite.js';

/**
 * A CommonJS app on Nest 11 + TypeORM 0.3, compiled by tsc with module commonjs (whose resolution
 * ignores `exports`: types from `types` and `typesVersions`), and type-checked once more with
 * module nodenext (types from the `require` condition). `require('nestjs-awa')` loads the CommonJS build.
 */
describe('the packed tarball in a CommonJS app on Nest 11 and TypeORM 0.3', () => {
  describePackedApp({
    name: 'cjs-nest11',
    ext: '.js',
    entry: 'dist/cjs/lib/index.js',
    alsoTypeCheckWith: ['tsconfig.nodenext.json'],
  });
});
