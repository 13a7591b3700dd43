import { DataSource } from 'typeorm';
import { AwaHotTableKeepPages1765100000001, AwaHotTableStorage1765000000500 } from '../../migrations/index.js';
import { useSqlFixture } from './sql-fixture.js';

/** The storage settings of the tables every job passes through (migrations AwaHotTableStorage, AwaHotTableKeepPages). */
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
      active_leases: [...autovacuum, 'fillfactor=70', 'vacuum_truncate=false'].sort(),
      job_dependencies: autovacuum,
      jobs: [...autovacuum, 'vacuum_truncate=false'].sort(),
    });
  });

  it('AwaHotTableKeepPages: down() lets autovacuum truncate awa.jobs and awa.active_leases again, up() stops it', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaHotTableKeepPages1765100000001();
    const keepsPages = async () =>
      Object.fromEntries(
        Object.entries(await settings()).map(([table, options]) => [
          table,
          (options as string[]).includes('vacuum_truncate=false'),
        ]),
      );
    try {
      expect(await keepsPages()).toEqual({ active_leases: true, job_dependencies: false, jobs: true });
      await migration.down(runner);
      expect(await keepsPages()).toEqual({ active_leases: false, job_dependencies: false, jobs: false });
      await migration.up(runner);
      expect(await keepsPages()).toEqual({ active_leases: true, job_dependencies: false, jobs: true });
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });

  it('down() gives both tables the server defaults back, and up() sets them again', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaHotTableStorage1765000000500();
    try {
      const before = await settings();
      await migration.down(runner);
      // What AwaHotTableKeepPages set stays.
      expect(await settings()).toEqual({
        active_leases: ['vacuum_truncate=false'],
        job_dependencies: [],
        jobs: ['vacuum_truncate=false'],
      });
      await migration.up(runner);
      expect(await settings()).toEqual(before);
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });
});
