/**
 * The queue options, in the order an unknown-option error lists them. Written out, not read from
 * the library: the tests pin what the error tells a user.
 */
export const QUEUE_OPTION_KEYS = [
  'concurrency',
  'deadlineDuration',
  'maxAttempts',
  'retryBaseDelay',
  'retryMaxDelay',
  'pollInterval',
  'prefetch',
  'maxSnoozes',
  'rateLimit',
  'keyConcurrency',
  'handoff',
];
