import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium; never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

const hasChromium = existsSync(CHROMIUM);
const skipping = (what: string) => console.warn(`skipping ${what}: ${CHROMIUM} is missing (apt-get install chromium)`);

/** `describe`, or `describe.skip` with the reason printed when there is no Chromium to drive. */
export function describeInBrowser(name: string, body: () => void): void {
  if (hasChromium) {
    describe(name, body);
  } else {
    skipping(`the browser tests "${name}"`);
    describe.skip(name, body);
  }
}

/** `it`, or `it.skip` with the reason printed when there is no Chromium to drive. */
export function itInBrowser(name: string, body: () => Promise<void>, timeout?: number): void {
  if (hasChromium) {
    it(name, body, timeout);
  } else {
    skipping(`the browser test "${name}"`);
    it.skip(name, body, timeout);
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/** The page's uncaught errors and console errors (a refused asset or a CSP violation is one), as they come. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()} (${message.location().url})`);
  });
  return errors;
}
