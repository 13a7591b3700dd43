import { AdminValidationError, AwaErrorCodes } from 'nestjs-awa';
import { compileFilter } from '../../lib/admin/job-filter.js';
import { caughtSync } from '../support/caught.js';

/** Every filter value is checked before the database: a typed error naming the field, never a raw one. */
describe('job filters', () => {
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const bad: Array<[string, unknown, string]> = [
    ['a filter that is not an object', 'failed', 'filter'],
    ['a filter that is an array', [], 'filter'],
    ['an unknown key (a typo)', { state: ['failed'] }, 'filter.state'],
    ['ids that are not an array', { ids: '1' }, 'filter.ids'],
    ['an id that is not digits', { ids: ['1', 'x1'] }, 'filter.ids[1]'],
    ['an id larger than a bigint', { ids: ['9223372036854775808'] }, 'filter.ids[0]'],
    ['an id given as a number', { ids: [1] }, 'filter.ids[0]'],
    ['an unknown state', { states: ['failed', 'done'] }, 'filter.states[1]'],
    ['an empty queue name', { queues: [''] }, 'filter.queues[0]'],
    ['a kind with the NUL character', { kinds: ['a\u0000b'] }, 'filter.kinds[0]'],
    ['a tag with a lone surrogate', { tags: ['\ud83d'] }, 'filter.tags[0]'],
    ['args that are an array', { args: [1] }, 'filter.args'],
    ['args that are null', { args: null }, 'filter.args'],
    ['args with a BigInt', { args: { n: 1n } }, 'filter.args'],
    ['args with a cycle', { args: circular }, 'filter.args'],
    ['args with a NUL character', { args: { s: '\u0000' } }, 'filter.args'],
    ['args that are a class instance', { args: new Date() }, 'filter.args'],
    ['a search that is not a string', { search: 42 }, 'filter.search'],
    ['an invalid date', { createdAfter: new Date('nope') }, 'filter.createdAfter'],
    ['a date given as a string', { finalizedBefore: '2026-01-01' }, 'filter.finalizedBefore'],
    ['too many ids', { ids: Array.from({ length: 10_001 }, () => '1') }, 'filter.ids'],
  ];

  it.each(bad)('refuses %s with an AdminValidationError naming the field', (_what, filter, field) => {
    const error = caughtSync(() => compileFilter(filter));
    expect(error).toBeInstanceOf(AdminValidationError);
    expect(error).toMatchObject({ code: AwaErrorCodes.adminValidation, field });
    expect((error as Error).message).toContain(field.replace(/\[\d+\]$/, '').split('.')[0]);
  });

  it('suggests the nearest key for a typo', () => {
    expect((caughtSync(() => compileFilter({ kind: ['x'] })) as Error).message).toContain('did you mean `kinds`');
  });

  it('builds its WHERE from fixed fragments: values are parameters, never part of the text', () => {
    const compiled = compileFilter({
      ids: ['7'],
      states: ['failed'],
      queues: ["it's"],
      kinds: ['k'],
      tags: ['t'],
      args: { a: "'; DROP TABLE awa.jobs; --" },
      search: '50%_off',
      createdAfter: new Date(0),
      createdBefore: new Date(1),
      finalizedAfter: new Date(2),
      finalizedBefore: new Date(3),
    });
    const where = compiled.where(3);
    expect(where).not.toContain("it's");
    expect(where).not.toContain('DROP');
    expect(where).toContain('$13');
    expect(where).not.toContain('$14');
    expect(compiled.values).toHaveLength(11);
    expect(compiled.values).toContain('%50\\%\\_off%');
  });

  it('gives one key per filter shape, whatever the values', () => {
    const a = compileFilter({ states: ['failed'], queues: ['a'] });
    const b = compileFilter({ states: ['cancelled', 'retryable'], queues: ['b', 'c'] });
    expect(a.key).toBe(b.key);
    expect(a.where(1)).toBe(b.where(1));
    expect(compileFilter({ states: ['completed'] }).key).not.toBe(a.key);
    expect(compileFilter({}).where(1)).toBe('true');
  });
});
