import type { Attributes, Context, Link, Span } from '@opentelemetry/api';
import type { AwaEvent, AwaEvents, AwaTraceHooks } from '../events/awa-events.js';
import type { ObservedAttempt } from '../events/observed-attempt.js';
import type { Job } from '../interfaces/job.interface.js';
import { INSTRUMENTATION_SCOPE, type OtelApi } from './otel-api.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';
import { AwaTelemetryMessages } from './telemetry.messages.js';

/** @internal OTel messaging semantic conventions, as this integration uses them. */
export const MessagingAttributes = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  kind: 'awa.job.kind',
  attempt: 'awa.job.attempt',
  state: 'awa.job.state',
  workflowId: 'awa.workflow.id',
} as const;

const M = MessagingAttributes;

/**
 * @internal A producer span per insert (`send <queue>`), whose context is stored with its jobs as
 * `traceparent`; a consumer span per attempt (`process <queue>`), a child of that context and
 * linked to it, so every attempt of a job (retries too) lands in the trace of its enqueue. Returns
 * the function that stops it.
 */
export function startTracing(api: OtelApi, events: AwaEvents): () => void {
  const tracer = api.trace.getTracer(INSTRUMENTATION_SCOPE);
  const { SpanKind, SpanStatusCode } = api;
  /** Consumer spans still open, ended by their attempt's end when the handler never settled. */
  const open = new WeakMap<ObservedAttempt, Span>();

  const fail = (span: Span, error: unknown): void => {
    if (error instanceof Error) span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  };

  const hooks: AwaTraceHooks = {
    send(jobs, insert) {
      const queues = [...new Set(jobs.map((j) => j.queue))];
      const attributes: Attributes = { [M.system]: 'awa', [M.operationType]: 'send', [M.operationName]: 'send' };
      if (queues.length === 1) attributes[M.destination] = queues[0];
      if (jobs.length === 1) attributes[M.kind] = jobs[0]!.kind;
      else attributes[M.batchCount] = jobs.length;
      const name = queues.length === 1 ? `send ${queues[0]}` : 'send';
      return tracer.startActiveSpan(name, { kind: SpanKind.PRODUCER, attributes }, async (span) => {
        try {
          return await insert(formatTraceparent(span.spanContext()));
        } catch (error) {
          fail(span, error);
          throw error;
        } finally {
          span.end();
        }
      });
    },

    process(attempt, invoke) {
      return (handed: Job) => {
        const producer = parseTraceparent(attempt.traceparent);
        // From the root: the claim loop may run in whatever context woke it (an enqueue's span).
        const parent: Context = producer ? api.trace.setSpanContext(api.ROOT_CONTEXT, producer) : api.ROOT_CONTEXT;
        // Literal keys (MessagingAttributes' values): a literal with computed keys is built slowly, per attempt.
        const attributes: Attributes = {
          'messaging.system': 'awa',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': attempt.queue,
          'messaging.message.id': attempt.jobId,
          'awa.job.kind': attempt.kind,
          'awa.job.attempt': attempt.attempt,
        };
        if (attempt.workflowId !== null) attributes['awa.workflow.id'] = attempt.workflowId;
        const links: Link[] = producer ? [{ context: producer }] : [];
        const span = tracer.startSpan(
          `process ${attempt.queue}`,
          { kind: SpanKind.CONSUMER, links, attributes },
          parent,
        );
        open.set(attempt, span);
        const settle = (error?: unknown): void => {
          if (open.get(attempt) !== span) return;
          open.delete(attempt);
          if (error !== undefined) fail(span, error);
          span.end();
        };
        let result: unknown;
        try {
          result = api.context.with(api.trace.setSpan(parent, span), invoke, undefined, handed);
        } catch (error) {
          settle(error ?? new Error(String(error)));
          throw error;
        }
        if (!isThenable(result)) {
          settle(); // a synchronous handler: no promise to wait for
          return result;
        }
        return result.then(
          (value) => {
            settle();
            return value;
          },
          (error: unknown) => {
            settle(error ?? new Error(String(error)));
            throw error;
          },
        );
      };
    },
  };

  /** An attempt ended without its handler settling (deadline, rescue): end its span now. */
  const onEvent = (event: AwaEvent): void => {
    if (event.type !== 'ended') return;
    const span = open.get(event.attempt);
    if (!span) return;
    open.delete(event.attempt);
    span.setAttribute(M.state, event.state ?? 'lease_lost');
    const message =
      event.outcome?.kind === 'deadline' ? AwaTelemetryMessages.deadlineExceeded : AwaTelemetryMessages.leaseLost;
    span.setStatus({ code: SpanStatusCode.ERROR, message });
    span.end();
  };

  events.traceWith(hooks);
  const unsubscribe = events.subscribe(onEvent);
  return () => {
    unsubscribe();
    events.traceWith(undefined);
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') &&
  value !== null &&
  typeof (value as PromiseLike<unknown>).then === 'function';
