import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
