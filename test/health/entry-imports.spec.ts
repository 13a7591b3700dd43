import { reachedFrom } from '../support/import-graph.js';

describe('entry points and the optional @nestjs/terminus peer', () => {
  it('the root entry and nestjs-awa/testing never load @nestjs/terminus', () => {
    for (const entry of ['index.ts', 'testing/index.ts']) {
      const { packages } = reachedFrom(entry);
      expect(packages).toContain('@nestjs/common'); // the walk does reach the sources
      expect([...packages].filter((p) => p.startsWith('@nestjs/terminus'))).toEqual([]);
    }
  });

  it('nestjs-awa/health is the entry that loads it', () => {
    expect(reachedFrom('health/index.ts').packages).toContain('@nestjs/terminus');
  });
});
