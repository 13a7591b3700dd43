import { Injectable } from '@nestjs/common';
import { OnJobEvent } from 'nestjs-awa';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';
import { handlerControl } from './dashboard-app.js';

/** A durable-event group that holds its first event until the test lets it go. */
const gate: { open: () => void; opened: Promise<void> } = (() => {
  let open = () => undefined as void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
})();

@Injectable()
class SlowBilling {
  @OnJobEvent('completed', { group: 'billing', kinds: ['email.send'] })
  async bill() {
    await gate.opened;
  }
}

describeInBrowser('dashboard durable-event groups in headless Chromium', () => {
  const f = useDashboardInBrowser({ providers: [SlowBilling] });

  it('overview: each group with who delivers it and its lag, down to none once it caught up', async () => {
    for (const to of ['a@example.com', 'b@example.com', 'c@example.com'])
      await f.producer.enqueue('email.send', { to }, { queue: 'emails' });
    await waitFor(async () => handlerControl.completed.length >= 3, 15_000, 'the emails to be sent');
    await f.page.goto(f.dash.url);
    const row = f.page.locator('#event-groups tr[data-group="billing"]');
    await row.waitFor();
    // Held at its first event: the group lags by the three completions, and an instance delivers it.
    await waitFor(async () => (await row.locator('td').nth(2).innerText()) === '3', 15_000, 'a lag of 3 events');
    expect(await row.locator('td').nth(1).innerText()).not.toBe('none');
    gate.open();
    await waitFor(async () => (await row.locator('td').nth(2).innerText()) === '0', 15_000, 'the group to catch up');
    expect(await row.locator('td').nth(3).innerText()).toBe('–');
  });
});
