import { existsSync } from 'node:fs';
import { QueueProducer } from 'nestjs-awa';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startDashboardApp, type DashboardApp } from './dashboard-app.js';

/** Debian's chromium; never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** `describe`, or `describe.skip` with the reason printed when there is no Chromium to drive. */
export function describeInBrowser(name: string, body: () => void): void {
  if (existsSync(CHROMIUM)) {
    describe(name, body);
  } else {
    console.warn(`skipping the browser tests "${name}": ${CHROMIUM} is missing (apt-get install chromium)`);
    describe.skip(name, body);
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/** A database, a dashboard app with real workers, and a Chromium page, for one spec file. */
export interface DashboardBrowserFixture {
  readonly db: TestDatabase;
  readonly dash: DashboardApp;
  readonly page: Page;
  readonly producer: QueueProducer;
  /** Plain SQL on the test database. */
  sql(text: string, values?: unknown[]): Promise<any[]>;
  /** The state of job `id`. */
  state(id: string): Promise<string | undefined>;
}

/** Sets up (beforeAll) and tears down (afterAll) a DashboardBrowserFixture; a page error fails the test. */
export function useDashboardInBrowser(): DashboardBrowserFixture {
  let db: TestDatabase | undefined;
  let dash: DashboardApp | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the browser fixture is set up in beforeAll');
    return value;
  };
  beforeAll(async () => {
    db = await createTestDatabase();
    dash = await startDashboardApp({ dbUrl: db.url });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('pageerror', (error) => {
      throw error;
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await db?.drop();
  });
  const fixture: DashboardBrowserFixture = {
    get db() {
      return ready(db);
    },
    get dash() {
      return ready(dash);
    },
    get page() {
      return ready(page);
    },
    get producer() {
      return ready(dash).app.get(QueueProducer);
    },
    sql: (text, values) => queryOnce<any>(ready(db).url, text, values),
    state: async (id) => (await fixture.sql('SELECT state FROM awa.jobs WHERE id = $1', [id]))[0]?.state,
  };
  return fixture;
}
