import { JobEventMessages } from '../awa.messages.js';
import { JOB_EVENT_NAMES, type OnJobEventMetadata } from '../decorators/on-job-event.decorator.js';
import { HandlerRegistrationError } from '../errors/handler-registration.error.js';
import type { JobEventGroup } from './job-event.consumer.js';

const GROUP_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

const filter = (value: unknown, field: string, handler: string): string[] => {
  if (value === undefined) return ['*'];
  if (!Array.isArray(value) || value.length === 0 || value.some((v) => typeof v !== 'string' || v.length === 0))
    throw new HandlerRegistrationError(handler, JobEventMessages.filterInvalid(handler, field));
  return [...new Set(value as string[])];
};

/** An @OnJobEvent's metadata checked at boot (on `handler`, `Class.method`): its group without the handler. */
export function checkGroup(meta: OnJobEventMetadata, handler: string): Omit<JobEventGroup, 'name' | 'invoke'> {
  if (typeof meta.group !== 'string' || !GROUP_NAME.test(meta.group))
    throw new HandlerRegistrationError(handler, JobEventMessages.groupInvalid(handler));
  const events = Array.isArray(meta.events) ? meta.events : [];
  const unknown = events.length === 0 ? undefined : events.find((e) => !JOB_EVENT_NAMES.includes(e));
  if (events.length === 0 || unknown !== undefined)
    throw new HandlerRegistrationError(handler, JobEventMessages.eventInvalid(handler, unknown, JOB_EVENT_NAMES));
  return {
    group: meta.group,
    events: [...new Set(events)],
    kinds: filter(meta.kinds, 'kinds', handler),
    queues: filter(meta.queues, 'queues', handler),
  };
}

/** The error of a group declared by two methods. */
checkGroup.duplicate = (group: string, first: string, second: string) =>
  new HandlerRegistrationError(second, JobEventMessages.duplicateGroup(group, first, second));
