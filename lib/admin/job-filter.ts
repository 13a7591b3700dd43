import { AdminMessages } from '../awa.messages.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import { JOB_STATES, type JobState } from '../interfaces/job.interface.js';
import { findUnknownKey } from '../util/nearest-name.js';
import { isStorableText, unstorableInJson } from '../util/unicode-text.js';

/**
 * Which jobs a QueueAdmin listing, count or bulk operation applies to. Every given field must
 * match (AND). A list field matches a job whose value is one of the list (an empty list matches
 * no job), except `tags`: the job must carry all of them. Dates are exclusive bounds.
 */
export interface JobFilter {
  ids?: string[];
  states?: JobState[];
  queues?: string[];
  kinds?: string[];
  /** The job has ALL of these tags. */
  tags?: string[];
  /** JSON containment: the job's args contain this object (`args @> filter.args`). */
  args?: Record<string, unknown>;
  /** Case-insensitive substring of the args as JSON text, or of the kind. */
  search?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  finalizedAfter?: Date;
  finalizedBefore?: Date;
  /** The jobs of one workflow (docs/workflows.md). */
  workflowId?: string;
}

/** A filter as SQL: fixed fragments whose values are parameters. */
export interface CompiledFilter {
  /** Names which fragments are present: the same key always means the same SQL text. */
  readonly key: string;
  /** The fragments joined by AND, their values as parameters $first, $first+1, ... */
  where(first: number): string;
  readonly values: unknown[];
}

/** Most values one list field of a filter may hold. */
export const FILTER_LIST_MAX = 10_000;
/** Longest queue name, kind, tag or search text a filter may hold. */
const TEXT_MAX = 1_000;
const BIGINT_MAX = 9_223_372_036_854_775_807n;

/** How much a filter may hold. QueueAdmin's are the defaults; the dashboard's HTTP API takes less. */
export interface FilterLimits {
  /** Most values of one list field. */
  list: number;
  /** Longest queue name, kind, tag or search text. */
  text: number;
}

/** The states jobs_admin_state_idx holds (migration AwaAdminIndexes). */
const ADMIN_INDEXED_STATES: readonly JobState[] = ['retryable', 'failed', 'cancelled'];

const ADMIN_LIMITS: FilterLimits = { list: FILTER_LIST_MAX, text: TEXT_MAX };

const FILTER_KEYS = Object.keys({
  ids: 1,
  states: 1,
  queues: 1,
  kinds: 1,
  tags: 1,
  args: 1,
  search: 1,
  createdAfter: 1,
  createdBefore: 1,
  finalizedAfter: 1,
  finalizedBefore: 1,
  workflowId: 1,
} satisfies Record<keyof JobFilter, 1>);

const refuse = (field: string, message: string): never => {
  throw new AdminValidationError(field, message);
};

/** Whether `id` can name a job: digits that fit a bigint. */
export function isJobId(id: unknown): id is string {
  return typeof id === 'string' && /^\d{1,19}$/.test(id) && BigInt(id) <= BIGINT_MAX;
}

/** `value` as a plain object with known keys only, else an AdminValidationError naming `field`. */
export function checkPlainObject(value: unknown, field: string, known?: readonly string[]): Record<string, unknown> {
  const plain =
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    [Object.prototype, null].includes(Object.getPrototypeOf(value));
  if (!plain) refuse(field, AdminMessages.notObject(field));
  const object = value as Record<string, unknown>;
  const unknown = known && findUnknownKey(object, known);
  if (unknown) {
    refuse(
      `${field}.${unknown.key}`,
      AdminMessages.unknownKey(field, unknown.key, unknown.nearest, unknown.close, known),
    );
  }
  return object;
}

/** A queue name, kind or tag: non-empty text PostgreSQL can store, of bounded length. */
export function checkText(value: unknown, field: string, max = TEXT_MAX): string {
  if (typeof value !== 'string' || value === '' || value.length > max || !isStorableText(value))
    refuse(field, AdminMessages.badText(field, max));
  return value as string;
}

function checkList<T>(value: unknown, field: string, max: number, item: (v: unknown, field: string) => T): T[] {
  if (!Array.isArray(value)) return refuse(field, AdminMessages.notArray(field));
  if (value.length > max) refuse(field, AdminMessages.tooMany(field, max));
  return value.map((v, i) => item(v, `${field}[${i}]`));
}

function checkId(value: unknown, field: string): string {
  if (!isJobId(value)) refuse(field, AdminMessages.badId(field));
  return value as string;
}

function checkState(value: unknown, field: string): JobState {
  if (!(JOB_STATES as readonly unknown[]).includes(value))
    refuse(field, AdminMessages.badState(field, String(value), JOB_STATES));
  return value as JobState;
}

/** A workflow id: a UUID. */
export function checkWorkflowId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !UUID.test(value)) refuse(field, AdminMessages.badWorkflowId(field));
  return value as string;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkDate(value: unknown, field: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) refuse(field, AdminMessages.badDate(field));
  return value as Date;
}

function checkArgs(value: unknown): Record<string, unknown> {
  const args = checkPlainObject(value, 'filter.args');
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    // BigInt values and circular structures land here.
    return refuse('filter.args', AdminMessages.badArgs(error instanceof Error ? error.message : String(error)));
  }
  if (unstorableInJson(json))
    refuse('filter.args', AdminMessages.badArgs('strings must not contain NUL or a lone UTF-16 surrogate'));
  return args;
}

/** `text` as an ILIKE pattern matching it anywhere, its own wildcards escaped. */
const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

/**
 * Checks every field of a filter, in a fixed order, and returns it with only the fields given.
 * Throws an AdminValidationError naming the first field at fault.
 */
export function checkFilter(filter: unknown, limits: FilterLimits = ADMIN_LIMITS): JobFilter {
  const f = checkPlainObject(filter, 'filter', FILTER_KEYS) as Record<keyof JobFilter, unknown>;
  const given = <T>(key: keyof JobFilter, check: (value: unknown, field: string) => T): T | undefined =>
    f[key] === undefined ? undefined : check(f[key], `filter.${key}`);
  const list =
    <T>(item: (v: unknown, field: string) => T) =>
    (value: unknown, field: string) =>
      checkList(value, field, limits.list, item);
  const text = (value: unknown, field: string) => checkText(value, field, limits.text);
  const checked: JobFilter = {
    ids: given('ids', list(checkId)),
    states: given('states', list(checkState)),
    queues: given('queues', list(text)),
    kinds: given('kinds', list(text)),
    tags: given('tags', list(text)),
    args: given('args', checkArgs),
    search: given('search', text),
    createdAfter: given('createdAfter', checkDate),
    createdBefore: given('createdBefore', checkDate),
    finalizedAfter: given('finalizedAfter', checkDate),
    finalizedBefore: given('finalizedBefore', checkDate),
    workflowId: given('workflowId', checkWorkflowId),
  };
  return Object.fromEntries(Object.entries(checked).filter(([, value]) => value !== undefined));
}

/**
 * Checks a filter (checkFilter) and turns it into a WHERE clause of fixed fragments, every value a
 * parameter: nothing the caller passed reaches PostgreSQL unchecked.
 */
export function compileFilter(filter: unknown): CompiledFilter {
  const f = checkFilter(filter);
  const clauses: Array<(first: number) => string> = [];
  const values: unknown[] = [];
  let key = '';
  const add = (letter: string, fragment: (p: string) => string, value: unknown) => {
    const offset = values.push(value) - 1;
    clauses.push((first) => fragment(`$${first + offset}`));
    key += letter;
  };
  if (f.ids) add('i', (p) => `id = ANY(${p}::bigint[])`, f.ids);
  if (f.states) {
    add('s', (p) => `state = ANY(${p}::text[])`, f.states);
    // A fixed fragment: the plan (custom or generic) may then use jobs_admin_state_idx, which holds
    // the failure states only.
    if (f.states.length > 0 && f.states.every((s) => ADMIN_INDEXED_STATES.includes(s))) {
      clauses.push(() => `state IN ('retryable', 'failed', 'cancelled')`);
      key += 'n';
    }
  }
  if (f.queues) add('q', (p) => `queue = ANY(${p}::text[])`, f.queues);
  if (f.kinds) add('k', (p) => `kind = ANY(${p}::text[])`, f.kinds);
  // `tags <> '{}'` lets the plan use jobs_tags_idx (untagged jobs are not in it).
  if (f.tags && f.tags.length > 0) add('t', (p) => `tags @> ${p}::text[] AND tags <> '{}'`, f.tags);
  // checkFilter has made sure the args stringify (no BigInt, no cycle).
  if (f.args) add('a', (p) => `args @> ${p}::jsonb`, JSON.stringify(f.args));
  if (f.search) add('x', (p) => `(args::text ILIKE ${p} OR kind ILIKE ${p})`, containsPattern(f.search));
  if (f.workflowId) add('w', (p) => `workflow_id = ${p}::uuid`, f.workflowId);
  const dates = [
    ['createdAfter', 'ca', 'created_at >'],
    ['createdBefore', 'cb', 'created_at <'],
    ['finalizedAfter', 'fa', 'finalized_at >'],
    ['finalizedBefore', 'fb', 'finalized_at <'],
  ] as const;
  for (const [field, letters, column] of dates) {
    const value = f[field];
    if (value) add(letters, (p) => `${column} ${p}::timestamptz`, value);
  }
  return {
    key: key || 'all',
    where: (first) => (clauses.length > 0 ? clauses.map((clause) => clause(first)).join(' AND ') : 'true'),
    values,
  };
}
