/**
 * A hand-written SVG line chart (no dependencies, no canvas): axes with "nice" ticks, optional
 * log scales, one polyline with markers per series, and a legend.
 */

export interface Series {
  name: string;
  points: Array<[number, number]>;
  /** Dashed line (for references). */
  dashed?: boolean;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  xLog?: boolean;
  yLog?: boolean;
  /** Explicit x ticks (e.g. writer counts); default computed. */
  xTicks?: number[];
  /** Draw markers on points (default true). */
  markers?: boolean;
  width?: number;
  height?: number;
}

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];

function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push(Number(t.toPrecision(12)));
  }
  return ticks;
}

function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e;
      if (t >= lo * 0.999 && t <= hi * 1.001) ticks.push(t);
    }
  }
  return ticks;
}

function label(v: number): string {
  if (Math.abs(v) >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (Math.abs(v) >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function lineChart(o: ChartOptions): string {
  const W = o.width ?? 720;
  const H = o.height ?? 420;
  const m = { left: 78, right: 180, top: 44, bottom: 56 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const all = o.series.flatMap((s) => s.points).filter(([x, y]) => isFinite(x) && isFinite(y));
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (!o.yLog) y0 = Math.min(0, y0);
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (y0 === y1) [y0, y1] = [y0 - 1, y1 + 1];
  if (!o.yLog) y1 += (y1 - y0) * 0.05;
  const tx = o.xLog ? (v: number) => Math.log10(v) : (v: number) => v;
  const ty = o.yLog ? (v: number) => Math.log10(v) : (v: number) => v;
  const sx = (v: number) => m.left + ((tx(v) - tx(x0)) / (tx(x1) - tx(x0))) * pw;
  const sy = (v: number) => m.top + ph - ((ty(v) - ty(y0)) / (ty(y1) - ty(y0))) * ph;
  const xTicks = o.xTicks ?? (o.xLog ? logTicks(x0, x1) : niceTicks(x0, x1));
  const yTicks = o.yLog ? logTicks(y0, y1) : niceTicks(y0, y1);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.left + pw / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(o.title)}</text>`,
  );
  for (const t of yTicks) {
    const y = sy(t).toFixed(1);
    out.push(
      `<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${m.left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${label(t)}</text>`,
    );
  }
  for (const t of xTicks) {
    const x = sx(t).toFixed(1);
    out.push(
      `<line x1="${x}" x2="${x}" y1="${m.top}" y2="${m.top + ph}" stroke="#f0f0f0"/>`,
      `<text x="${x}" y="${m.top + ph + 18}" text-anchor="middle">${label(t)}</text>`,
    );
  }
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`,
    `<text x="${m.left + pw / 2}" y="${H - 14}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  o.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.filter(([x, y]) => isFinite(x) && isFinite(y));
    const path = pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
    out.push(
      `<polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    if (o.markers ?? true) {
      for (const [x, y] of pts) {
        out.push(
          `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3.5" fill="${color}"/>`,
        );
      }
    }
    const ly = m.top + 10 + i * 20;
    out.push(
      `<line x1="${m.left + pw + 14}" x2="${m.left + pw + 40}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      `<text x="${m.left + pw + 46}" y="${ly}" dominant-baseline="middle">${esc(s.name)}</text>`,
    );
  });
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
