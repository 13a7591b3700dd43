import { BadRequestException } from '@nestjs/common';
import { checkFilter, checkWorkflowId, isJobId, type FilterLimits, type JobFilter } from '../admin/job-filter.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import type { JobFilterParams } from './dashboard.sql.js';
import { AwaDashboardMessages } from './dashboard.messages.js';

/** The job filter of the dashboard: the subset of QueueAdmin's JobFilter its pages offer. */
export type DashboardJobFilter = Pick<JobFilter, 'ids' | 'states' | 'queues' | 'kinds' | 'tags' | 'args' | 'search'>;

/** A bulk action: on the listed ids, or on every job matching the filter. */
export interface BulkRequest {
  action: 'retry' | 'cancel' | 'delete';
  filter: DashboardJobFilter;
}

export const PAGE_LIMIT_MAX = 500;
const PAGE_LIMIT_DEFAULT = 50;
/** Tighter than QueueAdmin's: a page's query string or a bulk body, not a program, builds these filters. */
const LIMITS: FilterLimits = { list: 1_000, text: 200 };

/** The query parameter (or body field) each filter field is read from: an error answer names it. */
const PARAMS: Record<keyof DashboardJobFilter, string> = {
  ids: 'ids',
  states: 'state',
  queues: 'queue',
  kinds: 'kind',
  tags: 'tag',
  args: 'args',
  search: 'search',
};

const absent = (value: unknown) => value === undefined || value === null || value === '';

const bad = (name: string, problem: string): never => {
  throw new BadRequestException(AwaDashboardMessages.badParam(name, problem));
};

/** A job id: the digits of a positive bigint. */
export function parseJobId(value: unknown, name = 'id'): string {
  const text = String(value);
  if (!isJobId(text) || BigInt(text) === 0n) bad(name, 'must be a job id (a positive integer)');
  return text;
}

/** A workflow id: a UUID, checked here so a bad one is a 400 naming the parameter, not a database error. */
export function parseWorkflowId(value: unknown, name = 'id'): string {
  try {
    return checkWorkflowId(String(value), name);
  } catch (error) {
    if (!(error instanceof AdminValidationError)) throw error;
    return bad(name, 'must be a workflow id (a UUID)');
  }
}

/** A query parameter (repeated, or comma-separated) or a body field (array) as a list of strings. */
function list(value: unknown, name: string): string[] | undefined {
  if (absent(value)) return undefined;
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v: unknown) => {
    if (typeof v !== 'string' && typeof v !== 'number') return bad(name, 'must be a string or a list of strings');
    return String(v).split(',');
  });
  const items = parts.map((p) => p.trim()).filter((p) => p !== '');
  return items.length ? items : undefined;
}

/** `args` given as JSON text (query string) is parsed; checkFilter checks it is a JSON object. */
function argsValue(value: unknown): unknown {
  if (absent(value)) return undefined;
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return bad('args', 'must be a JSON object, e.g. {"userId": 42}');
  }
}

/**
 * The filter from query parameters (GET) or from a JSON body's `filter` object (POST): read here,
 * checked by QueueAdmin's own checkFilter, its errors answered naming the parameter.
 */
export function parseFilter(source: unknown): DashboardJobFilter {
  if (source === undefined || source === null) return {};
  if (typeof source !== 'object' || Array.isArray(source)) return bad('filter', 'must be an object');
  const q = source as Record<string, unknown>;
  const read: Record<keyof DashboardJobFilter, unknown> = {
    ids: list(q.ids, 'ids')?.map((id) => parseJobId(id, 'ids')),
    states: list(q.states ?? q.state, 'state'),
    queues: list(q.queues ?? q.queue, 'queue'),
    kinds: list(q.kinds ?? q.kind, 'kind'),
    tags: list(q.tags ?? q.tag, 'tag'),
    args: argsValue(q.args),
    search: absent(q.search) ? undefined : q.search,
  };
  try {
    return checkFilter(read, LIMITS);
  } catch (error) {
    if (!(error instanceof AdminValidationError)) throw error;
    const key = error.field.split(/[.[]/)[1] ?? ''; // filter.states[0] -> states
    const param = key in PARAMS ? PARAMS[key as keyof DashboardJobFilter] : 'filter';
    return bad(param, AwaDashboardMessages.filterProblem(error.message));
  }
}

/** The filter as the parameters of the dashboard's list and count statements. */
export function filterParams(f: DashboardJobFilter): JobFilterParams {
  return [
    f.states ?? null,
    f.queues ?? null,
    f.kinds ?? null,
    f.tags ?? null,
    f.args ? JSON.stringify(f.args) : null,
    f.search ?? null,
    f.ids ?? null,
  ];
}

/** `after` (a cursor: the last id of the previous page) and `limit` (1 to 500, default 50). */
export function parsePage(q: Record<string, unknown>): { after: string | null; limit: number } {
  const after = q.after === undefined || q.after === '' ? null : parseJobId(q.after, 'after');
  const limit = q.limit === undefined || q.limit === '' ? PAGE_LIMIT_DEFAULT : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX)
    bad('limit', `must be an integer from 1 to ${PAGE_LIMIT_MAX}`);
  return { after, limit };
}

const ACTIONS = ['retry', 'cancel', 'delete'] as const;

/** `{ action, ids }` or `{ action, filter }`; an empty filter (every job) must be asked for with `all: true`. */
export function parseBulk(body: unknown): BulkRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('body', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  if (!ACTIONS.includes(b.action as BulkRequest['action'])) bad('action', `must be one of ${ACTIONS.join(', ')}`);
  if ((b.ids === undefined) === (b.filter === undefined)) bad('body', 'needs either `ids` or `filter`, not both');
  if (b.ids !== undefined && !Array.isArray(b.ids)) bad('ids', 'must be an array of job ids');
  const filter = b.ids !== undefined ? parseFilter({ ids: b.ids }) : parseFilter(b.filter);
  if (b.ids !== undefined && !filter.ids) bad('ids', 'must list at least one job id');
  if (Object.keys(filter).length === 0 && b.all !== true)
    bad('filter', 'is empty (every job): send `all: true` to mean it');
  return { action: b.action as BulkRequest['action'], filter };
}
