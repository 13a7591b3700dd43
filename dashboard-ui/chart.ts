// The overview's chart: completed and failed jobs per minute as stacked SVG bars.
import type { Minute } from './api.types.js';
import { content } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

export function chart(minutes: Minute[]): SVGSVGElement {
  const width = Math.max(300, Math.round((content.clientWidth || 630) - 30)),
    height = 140,
    top = 10,
    bottom = 18,
    barW = width / Math.max(1, minutes.length);
  const max = Math.max(1, ...minutes.map((m) => m.completed + m.failed));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 ' + width + ' ' + (height + bottom));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'completed and failed jobs per minute, last hour');
  const add = (tag: string, attrs: Record<string, string | number>, text?: string) => {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    svg.append(el);
    return el;
  };
  add('line', { x1: 0, x2: width, y1: height, y2: height, class: 'axis' });
  minutes.forEach((m, i) => {
    const hc = (m.completed / max) * (height - top),
      hf = (m.failed / max) * (height - top);
    const x = i * barW + 1,
      w = Math.max(1, barW - 2);
    const g = add('g', {});
    const t = document.createElementNS(SVG, 'title');
    t.textContent =
      new Date(m.minute).toLocaleTimeString() + ': ' + m.completed + ' completed, ' + m.failed + ' failed';
    g.append(t);
    const bars: Array<[string, number, number]> = [
      ['completed', height - hc, hc],
      ['failed', height - hc - hf, hf],
    ];
    for (const [cls, y, barHeight] of bars) {
      if (barHeight <= 0) continue;
      const r = document.createElementNS(SVG, 'rect');
      const attrs: Array<[string, string | number]> = [
        ['class', cls],
        ['x', x],
        ['y', y],
        ['width', w],
        ['height', barHeight],
      ];
      for (const [name, value] of attrs) r.setAttribute(name, String(value));
      g.append(r);
    }
  });
  add('text', { x: 2, y: top + 2 }, max + ' / min');
  add('text', { x: 2, y: height + 14 }, '-60 min');
  add('text', { x: width / 2 - 14, y: height + 14 }, '-30 min');
  add('text', { x: width - 24, y: height + 14 }, 'now');
  return svg;
}
