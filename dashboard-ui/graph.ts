// A workflow's drawing: its jobs in layers by dependency depth (a job sits one layer below its
// deepest dependency), its edges as arrows from a dependency to its dependent, as inline SVG.
import type { WorkflowEdge, WorkflowJob } from './api.types.js';
import { base } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const NODE_W = 168,
  NODE_H = 44,
  GAP_X = 28,
  GAP_Y = 64,
  PAD = 12;

/** Each job's layer: 0 for a job without dependencies, else 1 + its deepest dependency's (Kahn's order). */
export function layers(jobs: WorkflowJob[], edges: WorkflowEdge[]): Map<string, number> {
  const depth = new Map(jobs.map((j) => [j.id, 0]));
  const pending = new Map(jobs.map((j) => [j.id, 0]));
  const out = new Map<string, string[]>();
  for (const e of edges) {
    if (!depth.has(e.dependentId) || !depth.has(e.dependencyId)) continue; // an end of it is gone
    pending.set(e.dependentId, pending.get(e.dependentId)! + 1);
    out.set(e.dependencyId, [...(out.get(e.dependencyId) ?? []), e.dependentId]);
  }
  const ready = jobs.filter((j) => pending.get(j.id) === 0).map((j) => j.id);
  while (ready.length) {
    const id = ready.pop()!;
    for (const next of out.get(id) ?? []) {
      depth.set(next, Math.max(depth.get(next)!, depth.get(id)! + 1));
      const left = pending.get(next)! - 1;
      pending.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return depth;
}

/** A job's label: the ref its dependents name it by, else (a job nothing waits for) its kind. */
export function labelOf(job: WorkflowJob, edges: WorkflowEdge[]): string {
  const ref = edges.find((e) => e.dependencyId === job.id)?.ref ?? job.kind;
  return ref.length > 22 ? ref.slice(0, 21) + '…' : ref;
}

function el(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The drawing: each node a link to its job page, filled by its state; `ignore` edges dashed. */
export function drawGraph(jobs: WorkflowJob[], edges: WorkflowEdge[]): SVGSVGElement {
  const depth = layers(jobs, edges);
  const rows: WorkflowJob[][] = [];
  for (const j of jobs) (rows[depth.get(j.id)!] ??= []).push(j);
  // Order each layer by the mean position of its dependencies above (one pass: fewer crossings).
  const column = new Map<string, number>();
  rows.forEach((row, r) => {
    if (r > 0) {
      const mean = (j: WorkflowJob) => {
        const xs = edges.filter((e) => e.dependentId === j.id && column.has(e.dependencyId));
        return xs.length ? xs.reduce((s, e) => s + column.get(e.dependencyId)!, 0) / xs.length : 0;
      };
      row.sort((a, b) => mean(a) - mean(b));
    }
    row.forEach((j, i) => column.set(j.id, i - (row.length - 1) / 2));
  });
  const widest = Math.max(...rows.map((r) => r.length));
  const width = widest * (NODE_W + GAP_X) - GAP_X + 2 * PAD;
  const height = rows.length * (NODE_H + GAP_Y) - GAP_Y + 2 * PAD;
  const x = (id: string) => width / 2 + column.get(id)! * (NODE_W + GAP_X) - NODE_W / 2;
  const y = (id: string) => PAD + depth.get(id)! * (NODE_H + GAP_Y);

  const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img' }) as SVGSVGElement;
  svg.setAttribute('aria-label', `the workflow's ${jobs.length} jobs and ${edges.length} dependencies`);
  const marker = el('marker', {
    id: 'arrow',
    viewBox: '0 0 10 10',
    refX: 10,
    refY: 5,
    markerWidth: 8,
    markerHeight: 8,
    orient: 'auto',
  });
  marker.append(el('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }));
  const defs = el('defs', {});
  defs.append(marker);
  svg.append(defs);
  for (const e of edges) {
    if (!column.has(e.dependencyId) || !column.has(e.dependentId)) continue;
    const x1 = x(e.dependencyId) + NODE_W / 2,
      y1 = y(e.dependencyId) + NODE_H,
      x2 = x(e.dependentId) + NODE_W / 2,
      y2 = y(e.dependentId);
    const bend = (y2 - y1) / 2;
    const path = el('path', {
      d: `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`,
      class: 'edge' + (e.policy === 'ignore' ? ' ignore' : ''),
      'marker-end': 'url(#arrow)',
      'data-from': e.dependencyId,
      'data-to': e.dependentId,
    });
    path.append(el('title', {}, `${e.ref} → #${e.dependentId} (on failure: ${e.policy})`));
    svg.append(path);
  }
  for (const j of jobs) {
    const link = el('a', { href: base + '/jobs/' + j.id, class: 'node', 'data-node': j.id, 'data-state': j.state });
    link.append(
      el('title', {}, `#${j.id} ${j.kind} (${j.queue}): ${j.state}`),
      el('rect', { x: x(j.id), y: y(j.id), width: NODE_W, height: NODE_H, rx: 8, class: 'state state-' + j.state }),
      el('text', { x: x(j.id) + NODE_W / 2, y: y(j.id) + 18, class: 'ref' }, labelOf(j, edges)),
      el('text', { x: x(j.id) + NODE_W / 2, y: y(j.id) + 35, class: 'node-state' }, j.state),
    );
    svg.append(link);
  }
  return svg;
}
