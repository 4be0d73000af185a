/** Formatting of figures for the console tables and the markdown summary. */

/** 12345.6 -> "12,346"; 12.345 -> "12.3"; 0.01234 -> "0.0123". */
export function num(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const d = digits ?? (abs >= 1000 ? 0 : abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3);
  return value.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
}

export function ms(value: number): string {
  return `${num(value)} ms`;
}

export function ratio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : "-";
}

export function bytes(value: number): string {
  if (value >= 1024 * 1024) return `${(value / (1024 * 1024)).toFixed(1)} MiB`;
  if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${value} B`;
}

/** A table as aligned plain text (console) or as GitHub markdown. */
export interface Table {
  headers: string[];
  rows: string[][];
  /** How many leading columns are text (left-aligned); default 1. */
  left?: number;
}

export function textTable(table: Table): string {
  const widths = table.headers.map((h, i) =>
    Math.max(h.length, ...table.rows.map((r) => (r[i] ?? "").length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i < (table.left ?? 1) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ");
  return [
    line(table.headers),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...table.rows.map(line),
  ].join("\n");
}

/** `left`: how many leading columns are text (left-aligned); the rest are figures. */
export function markdownTable(table: Table, left = 1): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  return [
    `| ${table.headers.map(esc).join(" | ")} |`,
    `| ${table.headers.map((_, i) => (i < left ? "---" : "---:")).join(" | ")} |`,
    ...table.rows.map((r) => `| ${r.map(esc).join(" | ")} |`),
  ].join("\n");
}
