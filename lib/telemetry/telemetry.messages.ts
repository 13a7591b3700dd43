/** Texts of the OpenTelemetry integration (AwaTelemetryModule): telemetry keeps its own, out of the core's. */
export const AwaTelemetryMessages = {
  apiMissing: (reason: string) =>
    'AwaTelemetryModule needs the optional peer dependency @opentelemetry/api (npm install @opentelemetry/api), ' +
    `and it could not be loaded: ${reason}`,
  optionNotBoolean: 'expected true or false',
  optionsNotObject: 'expected an object such as { metrics: true, traces: true }',
  deadlineExceeded: 'hard deadline exceeded',
  leaseLost: 'lease lost: the attempt was rescued',
  noSdk: (providers: string[]) =>
    `no OpenTelemetry ${providers.join(' or ')} was registered when the app booted, so nestjs-awa reports ` +
    `nothing through it (and spends nothing on it). Register the OTel SDK before creating the Nest app.`,
} as const;
