import { Injectable } from '@nestjs/common';
import {
  AdminValidationError,
  HandlerRegistrationError,
  JOB_EVENT_NAMES,
  JobEventGroups,
  OnJobEvent,
  type JobEventName,
} from 'nestjs-awa';
import { JobEventMessages } from '../../lib/awa.messages.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

@Injectable()
class UnknownEvent {
  @OnJobEvent('finished' as JobEventName, { group: 'g' }) on() {}
}
@Injectable()
class BadGroup {
  @OnJobEvent('completed', { group: 'a group' }) on() {}
}
@Injectable()
class EmptyKinds {
  @OnJobEvent('completed', { group: 'g', kinds: [] }) on() {}
}
@Injectable()
class FirstBilling {
  @OnJobEvent('completed', { group: 'billing' }) on() {}
}
@Injectable()
class SecondBilling {
  @OnJobEvent('failed', { group: 'billing' }) again() {}
}

/** A bad @OnJobEvent fails the boot with a typed error naming the method; bad admin input fails before the database. */
describe('@OnJobEvent registration', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it.each([
    ['an unknown event', UnknownEvent, JobEventMessages.eventInvalid('UnknownEvent.on', 'finished', JOB_EVENT_NAMES)],
    ['a bad group name', BadGroup, JobEventMessages.groupInvalid('BadGroup.on')],
    ['an empty kinds filter', EmptyKinds, JobEventMessages.filterInvalid('EmptyKinds.on', 'kinds')],
  ])('refuses %s', async (_what, provider, message) => {
    const error = await caught(() => startTestApp({ url: db.url, providers: [provider] }));
    expect(error).toBeInstanceOf(HandlerRegistrationError);
    expect(error).toMatchObject({ message });
  });

  it('refuses a group handled by two methods, naming both', async () => {
    const error = await caught(() => startTestApp({ url: db.url, providers: [FirstBilling, SecondBilling] }));
    expect(error).toBeInstanceOf(HandlerRegistrationError);
    expect(error).toMatchObject({
      handler: 'SecondBilling.again',
      message: JobEventMessages.duplicateGroup('billing', 'FirstBilling.on', 'SecondBilling.again'),
    });
  });

  it('replay and drop refuse bad input before touching the database', async () => {
    const app = await startTestApp({ url: db.url, awa: { testing: true }, providers: [FirstBilling] });
    try {
      const groups = app.get(JobEventGroups);
      expect(await caught(() => groups.replay('billing', new Date('nope')))).toBeInstanceOf(AdminValidationError);
      expect(await caught(() => groups.replay('', new Date()))).toMatchObject({ field: 'group' });
      expect(await caught(() => groups.drop(5 as unknown as string))).toMatchObject({ field: 'group' });
      expect(groups.declared).toEqual(['billing']);
      expect(await groups.drop('billing')).toBe(true);
    } finally {
      await app.close();
    }
  });
});
