import { Module } from '@nestjs/common';
import { SampleDatabase } from './sample-database.service.js';

@Module({ providers: [SampleDatabase], exports: [SampleDatabase] })
export class SampleDatabaseModule {}
