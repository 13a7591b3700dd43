import { QueueProducer } from 'nestjs-awa';
import type { Browser, Page } from 'playwright-core';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { launchChromium } from './chromium.js';
import { startDashboardApp, type DashboardApp, type DashboardAppOptions } from './dashboard-app.js';

export { CHROMIUM, describeInBrowser, launchChromium } from './chromium.js';

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
export function useDashboardInBrowser(app: Omit<DashboardAppOptions, 'dbUrl'> = {}): DashboardBrowserFixture {
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
    dash = await startDashboardApp({ ...app, dbUrl: db.url });
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
    state: async (id) => (await fixture.sql('SELECT state FROM awa.all_jobs WHERE id = $1', [id]))[0]?.state,
  };
  return fixture;
}
