// Applies the bundled migrations with plain TypeORM 0.3, as `typeorm migration:run` would.
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions, say } from './consumer.options';

async function main(): Promise<void> {
  const dataSource = await new DataSource(dataSourceOptions).initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    say(`MIGRATED ${applied.map((m) => m.name).join(',')}`);
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
