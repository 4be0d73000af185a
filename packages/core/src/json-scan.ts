// Scans of JSON text and parsed values that guard the parser and the state: the nesting depth
// before \`JSON.parse\` (no recursion on hostile depth), and \`__proto__\` keys after it. Used by
// the entry decoder (entry.ts), chunked snapshots (chunked.ts) and restored snapshots.

/**
 * Nesting depth of JSON text, found iteratively (strings and escapes skipped), or -1 when it
 * exceeds `limit`. Runs before `JSON.parse` so hostile depth never reaches recursive code.
 */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // Jump to the closing quote (native search: a chunked snapshot's part is one long string):
      // the first quote after an even run of backslashes.
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return max; // unterminated: JSON.parse refuses it
        let k = j - 1;
        while (text.charCodeAt(k) === 92 /* \ */) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return -1;
      }
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return max;
}

/**
 * True when some object in `raw` has an own key `__proto__` (JSON.parse makes it an own
 * property, but copying it with `[[Set]]`, as Immer's patch values or `Object.assign` in a recipe
 * do, replaces the copy's prototype: a state whose reads differ between a replica that replayed
 * the entry and one that restored a snapshot, which JSON drops it from). Walks iteratively, and
 * only when the text could spell the key (literally or with `\u` escapes).
 */
export function hasProtoKey(text: string, raw: unknown): boolean {
  if (!text.includes("__proto__") && !text.includes("\\u")) return false;
  return hasOwnProtoKey(raw);
}

/** {@link hasProtoKey}'s walk, for a value without its text (a restored snapshot's state). */
export function hasOwnProtoKey(raw: unknown): boolean {
  const stack: unknown[] = [raw];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    if (Object.hasOwn(v, "__proto__")) return true;
    for (const k of Object.keys(v)) stack.push((v as Record<string, unknown>)[k]);
  }
  return false;
}
