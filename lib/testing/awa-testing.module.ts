import { Module } from '@nestjs/common';
import { AwaTesting } from './awa-testing.service.js';

/**
 * Provides AwaTesting. Import it in the test's module next to AwaModule.forRoot({ ..., testing: true })
 * (the manual mode, in which no background worker races the test for the jobs); without `testing: true`
 * the boot fails with an AwaSetupError saying so. AwaModule itself never provides AwaTesting.
 */
@Module({ providers: [AwaTesting], exports: [AwaTesting] })
export class AwaTestingModule {}
