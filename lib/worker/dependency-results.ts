import { AwaOptionError } from '../errors/awa-option.error.js';
import type { DependencyResult, DependencyResultsOptions } from '../interfaces/job.interface.js';
import type { DependencyResultRow } from '../sql/workflow.sql.js';

/** The most dependencies one job.dependencyResults() call returns: a large fan-in reads pages. */
export const DEPENDENCY_PAGE_MAX = 1000;

/** Reads a page of job `id`'s dependencies after ref `after` ('' : the first). */
export type DependencyReader = (id: string, after: string, limit: number) => Promise<DependencyResultRow[]>;

/** job.dependencyResults(): checks the options, then reads a page (nothing without a reader). */
export async function readDependencyResults<TOutput>(
  reader: DependencyReader | undefined,
  id: string,
  options: DependencyResultsOptions = {},
): Promise<DependencyResult<TOutput>[]> {
  const { limit = DEPENDENCY_PAGE_MAX, after = '' } = options ?? {};
  if (!Number.isInteger(limit) || limit < 1 || limit > DEPENDENCY_PAGE_MAX)
    throw new AwaOptionError('limit', `an integer from 1 to ${DEPENDENCY_PAGE_MAX}`);
  if (typeof after !== 'string') throw new AwaOptionError('after', 'a ref (string)');
  if (!reader) return [];
  const rows = await reader(id, after, limit);
  return rows.map((r) => ({ ref: r.ref, id: r.id, state: r.state, output: r.output as TOutput | null }));
}
