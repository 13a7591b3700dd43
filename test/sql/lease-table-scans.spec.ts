import { DataSource } from 'typeorm';
import { AwaLeaseTableScans1765100000000 } from '../../migrations/index.js';
import { useSqlFixture } from './sql-fixture.js';

/** Migration AwaLeaseTableScans: awa.active_leases keeps only its primary key. */
describe('lease table scans', () => {
  const f = useSqlFixture({ reset: false });
  const indexes = async () =>
    (
      await f.sql(`SELECT indexrelid::regclass::text AS name FROM pg_index
                    WHERE indrelid = 'awa.active_leases'::regclass ORDER BY 1`)
    ).map((r) => r.name);

  it('down() gives awa.active_leases its three scan indexes back, and up() drops them again', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaLeaseTableScans1765100000000();
    try {
      expect(await indexes()).toEqual(['awa.active_leases_pkey']);
      await migration.down(runner);
      expect(await indexes()).toEqual([
        'awa.active_leases_claimed_idx',
        'awa.active_leases_deadline_idx',
        'awa.active_leases_instance_idx',
        'awa.active_leases_pkey',
      ]);
      await migration.up(runner);
      expect(await indexes()).toEqual(['awa.active_leases_pkey']);
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });
});
