import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaActiveLeaseEntity } from '../entities/active-lease.entity.js';
import { AwaInstanceEntity } from '../entities/instance.entity.js';
import { AwaJobEntity } from '../entities/job.entity.js';
import { AwaSetupError } from '../errors/awa-setup.error.js';
import { SchemaError } from '../errors/schema.error.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { migrationsSql } from '../sql/index.js';
import { AwaMigrations } from '../../migrations/index.js';
import { AwaDatabase } from './awa-database.js';

/** Boot checks: a PostgreSQL DataSource, our entities on it, and an up-to-date awa schema. */
@Injectable()
export class SchemaVerifier {
  private readonly logger = new Logger('AwaSchema');

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  async verify(): Promise<void> {
    const { dataSource } = this.db;
    if (dataSource.options.type !== 'postgres')
      throw new AwaSetupError(AwaMessages.notPostgres(String(dataSource.options.type)));
    const missing = [AwaJobEntity, AwaActiveLeaseEntity, AwaInstanceEntity]
      .filter((entity) => !dataSource.hasMetadata(entity))
      .map((entity) => entity.name);
    if (missing.length > 0) throw new AwaSetupError(AwaMessages.entitiesMissing(missing));

    if (this.options.migrationsRun) await this.runMigrations();

    const [schema] = await this.db.query(migrationsSql.schemaExists);
    if (!schema?.present)
      throw new SchemaError(
        AwaMessages.schemaMissing(),
        AwaMigrations.map((m) => m.name),
      );
    const [applied] = await this.db.query(migrationsSql.appliedMigrations);
    const names = applied?.names ?? [];
    const pending = AwaMigrations.map((m) => m.name).filter((name) => !names.includes(name));
    if (pending.length > 0) throw new SchemaError(AwaMessages.schemaOutdated(pending), pending);
  }

  /** Applies the bundled migrations; each one locks and skips itself if already applied. */
  private async runMigrations(): Promise<void> {
    const queryRunner = this.db.dataSource.createQueryRunner();
    try {
      for (const Migration of AwaMigrations) await new Migration().up(queryRunner);
      this.logger.log(`awa migrations applied or already up to date (${AwaMigrations.length})`);
    } finally {
      await queryRunner.release();
    }
  }
}
