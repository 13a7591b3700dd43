import { BadRequestException } from '@nestjs/common';
import { DashboardMessages } from '../awa.messages.js';
import { JOB_STATES, type JobState } from '../interfaces/job.interface.js';
import type { JobFilterParams } from './dashboard.sql.js';

/** The job filter of the dashboard: the subset of QueueAdmin's JobFilter its pages offer. */
export interface DashboardJobFilter {
  ids?: string[];
  states?: JobState[];
  queues?: string[];
  kinds?: string[];
  tags?: string[];
  args?: Record<string, unknown>;
  search?: string;
}

/** A bulk action: on the listed ids, or on every job matching the filter. */
export interface BulkRequest {
  action: 'retry' | 'cancel' | 'delete';
  filter: DashboardJobFilter;
}

const BIGINT_MAX = 9223372036854775807n;
export const PAGE_LIMIT_MAX = 500;
const PAGE_LIMIT_DEFAULT = 50;
const LIST_MAX = 1_000;
const TEXT_MAX = 200;

const bad = (name: string, problem: string): never => {
  throw new BadRequestException(DashboardMessages.badParam(name, problem));
};

/** A job id: the digits of a positive bigint. */
export function parseJobId(value: unknown, name = 'id'): string {
  const text = String(value);
  if (!/^\d{1,19}$/.test(text) || BigInt(text) > BIGINT_MAX || BigInt(text) === 0n)
    bad(name, 'must be a job id (a positive integer)');
  return text;
}

/** A query parameter (repeated, or comma-separated) or a body field (array) as a list of strings. */
function list(value: unknown, name: string): string[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v: unknown) => {
    if (typeof v !== 'string' && typeof v !== 'number') return bad(name, 'must be a string or a list of strings');
    return String(v).split(',');
  });
  const items = parts.map((p) => p.trim()).filter((p) => p !== '');
  if (items.length > LIST_MAX) bad(name, `lists at most ${LIST_MAX} values`);
  for (const item of items)
    if (item.length > TEXT_MAX || item.includes('\0')) bad(name, 'has a value too long or with NUL');
  return items.length ? items : undefined;
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') return bad(name, 'must be a string');
  if (value.length > TEXT_MAX || value.includes('\0')) bad(name, `must be at most ${TEXT_MAX} characters, without NUL`);
  return value;
}

/** `args` as a JSON object, given as JSON text (query string) or as an object (JSON body). */
function argsObject(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return bad('args', 'must be a JSON object, e.g. {"userId": 42}');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    bad('args', 'must be a JSON object, e.g. {"userId": 42}');
  if (JSON.stringify(parsed).includes('\\u0000')) bad('args', 'must not contain NUL');
  return parsed as Record<string, unknown>;
}

/** The filter from query parameters (GET) or from a JSON body's `filter` object (POST). */
export function parseFilter(source: unknown): DashboardJobFilter {
  if (source === undefined || source === null) return {};
  if (typeof source !== 'object' || Array.isArray(source)) return bad('filter', 'must be an object');
  const q = source as Record<string, unknown>;
  const states = list(q.states ?? q.state, 'state');
  for (const s of states ?? [])
    if (!(JOB_STATES as readonly string[]).includes(s)) bad('state', `"${s}" is not one of ${JOB_STATES.join(', ')}`);
  const filter: DashboardJobFilter = {
    ids: list(q.ids, 'ids')?.map((id) => parseJobId(id, 'ids')),
    states: states as JobState[] | undefined,
    queues: list(q.queues ?? q.queue, 'queue'),
    kinds: list(q.kinds ?? q.kind, 'kind'),
    tags: list(q.tags ?? q.tag, 'tag'),
    args: argsObject(q.args),
    search: text(q.search, 'search'),
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined));
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
