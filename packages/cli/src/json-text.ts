/**
 * JSON text of a value of any nesting depth. `JSON.stringify` recurses, and overflows Node's
 * stack at a few thousand levels (about 4,000 here): a state that deep is legal (unconditional
 * commands can build it, docs/format.md "Limits"), and `statesync state` died on it with
 * `INTERNAL: RangeError` (found by a fresh-eyes trial). Values up to {@link RECURSE_UP_TO}
 * levels take `JSON.stringify`; deeper ones an iterative writer with the same output.
 */
import { nestedDeeperThan } from "@statesync/node";

/** Deepest value handed to `JSON.stringify` (well below where it overflows). */
const RECURSE_UP_TO = 1_000;

/** `JSON.stringify(value, null, indent)` for a JSON value (a state, an entry), at any depth. */
export function jsonText(value: unknown, indent = 0): string {
  if (!nestedDeeperThan(value, RECURSE_UP_TO)) return JSON.stringify(value, null, indent);
  return iterativeJson(value, indent);
}

/** A container being written: its members left, and whether one was written yet. */
interface Frame {
  readonly close: string;
  readonly members: [key: string | undefined, value: unknown][];
  next: number;
  readonly level: number;
}

function iterativeJson(root: unknown, indent: number): string {
  const out: string[] = [];
  const gap = (level: number) => (indent > 0 ? `\n${" ".repeat(indent * level)}` : "");
  const colon = indent > 0 ? ": " : ":";
  const stack: Frame[] = [];
  // Writes a value: a scalar at once, a container's opening (its members follow).
  const open = (value: unknown, level: number): void => {
    if (value === null || typeof value !== "object") {
      out.push(JSON.stringify(value) ?? "null");
      return;
    }
    const members: Frame["members"] = Array.isArray(value)
      ? value.map((v): [undefined, unknown] => [undefined, v])
      : Object.entries(value).filter(([, v]) => v !== undefined && typeof v !== "function");
    const [start, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
    if (members.length === 0) {
      out.push(start + close);
      return;
    }
    out.push(start);
    stack.push({ close, members, next: 0, level: level + 1 });
  };
  open(root, 0);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next === frame.members.length) {
      stack.pop();
      out.push(gap(frame.level - 1) + frame.close);
      continue;
    }
    const [key, value] = frame.members[frame.next]!;
    out.push((frame.next > 0 ? "," : "") + gap(frame.level));
    if (key !== undefined) out.push(JSON.stringify(key) + colon);
    frame.next += 1;
    open(value, frame.level);
  }
  return out.join("");
}
