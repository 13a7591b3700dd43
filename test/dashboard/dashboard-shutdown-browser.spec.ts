import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Server } from 'node:http';
import type { Browser, Page, Response } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, launchChromium } from './browser.js';
import { startDashboardApp, type DashboardApp } from './dashboard-app.js';

/** Holds the dashboard's API calls while armed, so that one is in flight when the app closes. */
const gate = {
  armed: false,
  held: 0,
  waiting: [] as Array<() => void>,
  release(): void {
    this.armed = false;
    for (const open of this.waiting.splice(0)) open();
  },
};

@Injectable()
class GateGuard implements CanActivate {
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const url = String(http.getRequest<{ url?: string }>().url);
    if (gate.armed && url.includes('/api/')) {
      gate.held++;
      // Marks its answer: polls already past the guard may still be answered after the gate closed.
      const response = http.getResponse<{
        setHeader?: (n: string, v: string) => void;
        header?: (n: string, v: string) => void;
      }>();
      if (response.setHeader) response.setHeader(HELD_HEADER, '1');
      else response.header?.(HELD_HEADER, '1');
      await new Promise<void>((resolve) => gate.waiting.push(resolve));
    }
    return true;
  }
}

const HUNG = Symbol('hung');
const HELD_HEADER = 'x-gate-held';

/**
 * An open dashboard tab must not hold up the app's shutdown. The page polls on a keep-alive
 * connection; Node's server.close() ends only the connections idle at that moment, so one whose poll
 * was in flight stayed open for the next polls, and app.close() never returned (CI saw the hang).
 */
for (const adapter of ['express', 'fastify'] as const)
  describeInBrowser(`dashboard on ${adapter}: an open tab and the app shutting down, in headless Chromium`, () => {
    let db: TestDatabase;
    let dash: DashboardApp;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      db = await createTestDatabase();
      dash = await startDashboardApp({
        dbUrl: db.url,
        dashboard: { path: '/awa', refreshInterval: 100, guard: GateGuard },
        noWorkers: true,
        fastify: adapter === 'fastify',
      });
      browser = await launchChromium();
      page = await browser.newPage();
    });
    afterAll(async () => {
      gate.release();
      await browser?.close();
      await db?.drop();
    });

    it('app.close() returns while the page keeps polling, a poll in flight as the server closes; on Express that answer says Connection: close', async () => {
      const answers: Response[] = [];
      page.on('response', (response) => {
        if (response.url().includes('/api/')) answers.push(response);
      });
      await page.goto(`${dash.url}/instances`);
      await waitFor(async () => answers.length >= 3, 10_000, 'the page to poll');

      gate.armed = true;
      await waitFor(async () => gate.held > 0, 10_000, 'a poll to be held in flight');
      const server = dash.app.getHttpServer() as Server;
      const closed = dash.app.close();
      // Released only once the server has stopped listening: the held poll is answered after close().
      await waitFor(async () => !server.listening, 10_000, 'the server to stop listening');
      gate.release();

      // The bound is cleared: a 20 s timer left running would keep this Jest worker from exiting.
      let bound: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        closed,
        new Promise((resolve) => (bound = setTimeout(resolve, 20_000, HUNG))),
      ]);
      clearTimeout(bound);
      expect(outcome).not.toBe(HUNG);
      if (adapter === 'express') {
        // (Fastify's own close ends that poll's connection: it is not answered there.)
        const heldAnswer = await waitFor(
          () => answers.find((answer) => answer.headers()[HELD_HEADER] === '1'),
          10_000,
          'the browser to report the held answer',
        );
        expect((await heldAnswer.allHeaders()).connection).toBe('close');
      }
    });
  });
