// The nestjs-awa sample: `npm run sample`, then curl the URL it prints.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { abortOnError: false });
  // SIGTERM/SIGINT: stop claiming, let running jobs finish, close TypeORM, stop the embedded server.
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  try {
    await app.listen(port);
  } catch (error) {
    await app.close();
    throw error;
  }
  const url = `http://localhost:${port}`;
  new Logger('Sample').log(
    `listening on ${url}; try: curl -s -X POST ${url}/jobs/email -H 'content-type: application/json' ` +
      `-d '{"to":"ada@example.com","subject":"hello"}' then curl -s ${url}/jobs/<id>`,
  );
}

main().catch((error: unknown) => {
  new Logger('Sample').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
