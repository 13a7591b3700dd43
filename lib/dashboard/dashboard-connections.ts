import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { ServerResponse } from 'node:http';

/**
 * Lets the app shut down while a dashboard tab is open. The page polls every `refreshInterval` on a
 * keep-alive connection, and Node's `server.close()` ends only the connections idle at that moment:
 * one whose poll was in flight stayed open for the next polls, and `app.close()` never returned.
 * Once the app is closing, every dashboard answer, those in flight included, says `Connection: close`.
 * Not marked internal: the declared constructor of AwaDashboardModule names it.
 */
@Injectable()
export class DashboardConnections implements OnModuleDestroy {
  private closing = false;
  private readonly inFlight = new Set<ServerResponse>();

  /** Middleware (Express's response, or Fastify's raw one: both are Node's ServerResponse). */
  readonly track = (_request: unknown, response: ServerResponse, next: () => void): void => {
    if (this.closing) {
      response.setHeader('connection', 'close');
    } else {
      this.inFlight.add(response);
      response.once('close', () => this.inFlight.delete(response));
    }
    next();
  };

  onModuleDestroy(): void {
    this.closing = true;
    for (const response of this.inFlight) if (!response.headersSent) response.setHeader('connection', 'close');
    this.inFlight.clear();
  }
}
