import { DataSource } from 'typeorm';
import { AwaHotTableStorage1765000000500 } from '../../migrations/index.js';
import { useSqlFixture } from './sql-fixture.js';

/** The storage settings of the tables every job passes through (migration AwaHotTableStorage). */
describe('hot table storage', () => {
  const f = useSqlFixture({ reset: false });
  const settings = async () =>
    Object.fromEntries(
      (
        await f.sql(
          `SELECT c.relname, coalesce(c.reloptions, '{}') AS options FROM pg_class c
            WHERE c.oid IN ('awa.jobs'::regclass, 'awa.active_leases'::regclass, 'awa.job_dependencies'::regclass)
            ORDER BY c.relname`,
        )
      ).map((r) => [r.relname, [...r.options].sort()]),
    );

  it('awa.jobs, awa.active_leases and awa.job_dependencies are vacuumed at small fractions, unthrottled, with room on each page of the leases', async () => {
    const autovacuum = [
      'autovacuum_analyze_scale_factor=0.05',
      'autovacuum_vacuum_cost_delay=0',
      'autovacuum_vacuum_insert_scale_factor=0.02',
      'autovacuum_vacuum_scale_factor=0.02',
    ];
    expect(await settings()).toEqual({
      active_leases: [...autovacuum, 'fillfactor=70'].sort(),
      job_dependencies: autovacuum,
      jobs: autovacuum,
    });
  });

  it('down() gives both tables the server defaults back, and up() sets them again', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaHotTableStorage1765000000500();
    try {
      const before = await settings();
      await migration.down(runner);
      expect(await settings()).toEqual({ active_leases: [], job_dependencies: [], jobs: [] });
      await migration.up(runner);
      expect(await settings()).toEqual(before);
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });
});
