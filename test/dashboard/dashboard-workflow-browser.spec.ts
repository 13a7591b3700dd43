import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/wait-for.js';
import { describeInBrowser, useDashboardInBrowser } from './browser.js';

/** As in dashboard-browser.spec.ts: docs/ is rewritten only with AWA_DASHBOARD_SCREENSHOTS=1. */
const SHOTS = process.env.AWA_DASHBOARD_SCREENSHOTS === '1' ? 'docs' : join(tmpdir(), 'awa-dashboard-shots');

describeInBrowser('dashboard workflow page in headless Chromium', () => {
  const f = useDashboardInBrowser();

  it('draws a diamond with a failed branch: nodes by state, edges as arrows, each node a link', async () => {
    // fetch -> (render fails, thumbnail) -> publish (cancelled by the failure) -> audit (ignore: runs).
    const { workflowId, ids } = await f.producer.enqueueGraph([
      { ref: 'fetch', kind: 'email.send', args: { to: 'fetch@example.com' }, queue: 'emails' },
      { ref: 'render', kind: 'report.flaky', args: { reportId: 'R1' }, queue: 'reports', dependsOn: ['fetch'] },
      { ref: 'thumbnail', kind: 'email.send', args: {}, queue: 'emails', dependsOn: ['fetch'] },
      { ref: 'publish', kind: 'email.send', args: {}, queue: 'emails', dependsOn: ['render', 'thumbnail'] },
      {
        ref: 'audit',
        kind: 'email.send',
        args: {},
        queue: 'emails',
        dependsOn: ['publish'],
        onDependencyFailure: 'ignore',
      },
    ]);
    await waitFor(
      async () => (await f.state(ids.audit!)) === 'completed',
      20_000,
      'the workflow to end (audit runs last)',
    );
    await f.page.goto(`${f.dash.url}/workflows/${workflowId}`);
    const nodes = f.page.locator('#graph svg a.node');
    await nodes.first().waitFor();
    const states = await nodes.evaluateAll((as) =>
      as.map((a) => [a.getAttribute('data-node'), a.getAttribute('data-state')]),
    );
    expect(Object.fromEntries(states)).toEqual({
      [ids.fetch!]: 'completed',
      [ids.render!]: 'failed',
      [ids.thumbnail!]: 'completed',
      [ids.publish!]: 'cancelled',
      [ids.audit!]: 'completed',
    });
    // Each node says its ref and its state, and is filled by the state's colour.
    expect(await f.page.locator(`a.node[data-node="${ids.render}"]`).textContent()).toContain('renderfailed');
    const fill = (id: string) =>
      f.page
        .locator(`a.node[data-node="${id}"] rect`)
        .evaluate((r) => (globalThis as any).getComputedStyle(r).fill as string);
    expect(await fill(ids.render!)).not.toBe(await fill(ids.fetch!));
    const edges = await f.page
      .locator('#graph svg path.edge')
      .evaluateAll((ps) =>
        ps.map(
          (p) =>
            `${p.getAttribute('data-from')}>${p.getAttribute('data-to')}${p.classList.contains('ignore') ? ' dashed' : ''}`,
        ),
      );
    expect(edges.sort()).toEqual(
      [
        `${ids.fetch}>${ids.render}`,
        `${ids.fetch}>${ids.thumbnail}`,
        `${ids.render}>${ids.publish}`,
        `${ids.thumbnail}>${ids.publish}`,
        `${ids.publish}>${ids.audit} dashed`,
      ].sort(),
    );
    // Layers by depth: fetch above render and thumbnail (side by side), above publish, above audit.
    const top = async (id: string) => Number(await f.page.locator(`a.node[data-node="${id}"] rect`).getAttribute('y'));
    const ys = await Promise.all([ids.fetch!, ids.render!, ids.thumbnail!, ids.publish!, ids.audit!].map(top));
    expect(ys[0]! < ys[1]! && ys[1] === ys[2] && ys[2]! < ys[3]! && ys[3]! < ys[4]!).toBe(true);
    expect(await f.page.locator('#workflow-jobs tr[data-job-id]').count()).toBe(5);
    mkdirSync(SHOTS, { recursive: true });
    await f.page.screenshot({ path: join(SHOTS, 'dashboard-workflow.png'), fullPage: true });

    // A node goes to its job page, whose Workflow fact links back here.
    await f.page.locator(`a.node[data-node="${ids.publish}"]`).click();
    await f.page.waitForURL(new RegExp(`/jobs/${ids.publish}$`));
    await f.page.locator('#dependencys').waitFor();
    await f.page.getByRole('link', { name: workflowId }).click();
    await f.page.waitForURL(new RegExp(`/workflows/${workflowId}$`));
    await f.page.locator('#graph svg').waitFor();
  });

  it('lists a workflow of over 200 jobs as a table only, with a note instead of the drawing', async () => {
    // A chain of a kind no worker handles: the first job available, every other waiting.
    const { workflowId } = await f.producer.enqueueGraph(
      Array.from({ length: 201 }, (_, i) => ({
        ref: `step-${i}`,
        kind: 'wf.step',
        args: {},
        queue: 'default',
        dependsOn: i ? [`step-${i - 1}`] : [],
      })),
    );
    await f.page.goto(`${f.dash.url}/workflows/${workflowId}`);
    await f.page.locator('#workflow-jobs tr[data-job-id]').first().waitFor();
    expect(await f.page.locator('#workflow-jobs tr[data-job-id]').count()).toBe(201);
    expect(await f.page.locator('#graph svg').count()).toBe(0);
    expect(await f.page.locator('#graph').innerText()).toContain('201 jobs: too many to draw (over 200)');
  });
});
