import type { Exec } from './job-factory.js';

/** SQLSTATE deadlock_detected. */
const DEADLOCK = '40P01';

/**
 * TRUNCATE `tables` (RESTART IDENTITY) beside a live app. Its claims and sweeps lock the same tables
 * in other orders, so PostgreSQL may choose the TRUNCATE as a deadlock's victim: it is tried again then.
 */
export async function truncateLive(exec: Exec, tables: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await exec(`TRUNCATE ${tables} RESTART IDENTITY`);
      return;
    } catch (error) {
      const code = (error as { code?: string; driverError?: { code?: string } }).driverError?.code;
      if (code !== DEADLOCK || attempt === 5) throw error;
    }
  }
}
