/**
 * The fast path of `checkEnvelope` (entry.ts): plainly valid `update`, `command` and one-message
 * `snapshot` envelopes are accepted without zod (zod costs several microseconds an entry). It
 * answers only where the zod schema surely accepts, with no key zod would strip; anything else
 * (undefined) goes to zod, so both accept exactly the same inputs.
 */
import type { Entry } from "./entry-types.js";
import { CHECKED_COMMAND_FORMAT, WRITE_FORMAT, MAX_RECENT } from "./entry-limits.js";

// ---- fast path: true only where the zod schema above surely accepts, with no key zod would strip

const isCount = (v: unknown): v is number =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isSeed = (v: unknown) => isCount(v) && v <= 0xffffffff;
/** zod's `max` counts code points; `length` (UTF-16 units) is never fewer, so this is sure. */
const isShortString = (v: unknown, max: number, min = 0) =>
  typeof v === "string" && v.length <= max && v.length >= min;
const PATCH_OPS = new Set(["add", "remove", "replace"]);

/** True when every own key of `o` is in `allowed`, and `o` is a plain object. */
function onlyKeys(o: unknown, allowed: ReadonlySet<string>, required: number): boolean {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return false;
  if (Object.getPrototypeOf(o) !== Object.prototype) return false;
  let n = 0;
  for (const k in o) {
    if (!allowed.has(k)) return false;
    n += 1;
  }
  return n >= required;
}

const UPDATE_KEYS = new Set(["v", "kind", "ts", "client", "base", "seed", "patches", "commands"]);
const COMMAND_KEYS = new Set(["v", "kind", "ts", "client", "seed", "name", "args", "mv"]);
const SNAPSHOT_KEYS = new Set(
  "v kind ts client base model version initialHash state recent from".split(" "),
);
const PATCH_KEYS = new Set(["op", "path", "value"]);
const CALL_KEYS = new Set(["name", "args"]);

function isRecent(r: unknown): boolean {
  return (
    Array.isArray(r) && r.length === 3 && isShortString(r[0], 256) && isCount(r[1]) && isCount(r[2])
  );
}

function fastPatch(p: unknown): boolean {
  if (!onlyKeys(p, PATCH_KEYS, 2)) return false;
  const { op, path } = p as { op?: unknown; path?: unknown };
  if (typeof op !== "string" || !PATCH_OPS.has(op) || !Array.isArray(path)) return false;
  for (const k of path) if (typeof k !== "string" && !isCount(k)) return false;
  return true;
}

function fastCall(c: unknown): boolean {
  return (
    onlyKeys(c, CALL_KEYS, 1) &&
    isShortString((c as { name?: unknown }).name, 256, 1) &&
    "args" in (c as object)
  );
}

export function fastEnvelope(raw: Record<string, unknown>): Entry | undefined {
  const checked = raw.v === CHECKED_COMMAND_FORMAT && raw.kind === "command";
  if ((raw.v !== WRITE_FORMAT && !checked) || !isCount(raw.ts) || !isShortString(raw.client, 256)) {
    return undefined;
  }
  if (raw.kind === "update") {
    if (!onlyKeys(raw, UPDATE_KEYS, 7) || !isCount(raw.base) || !isSeed(raw.seed)) return undefined;
    const { patches, commands } = raw;
    if (!Array.isArray(patches) || !patches.every(fastPatch)) return undefined;
    if ("commands" in raw && (!Array.isArray(commands) || !commands.every(fastCall))) {
      return undefined;
    }
    return raw as unknown as Entry;
  }
  if (raw.kind === "snapshot") {
    // state: anything (checked against the model where it is applied); recent: up to 4,000 ids
    if (!onlyKeys(raw, SNAPSHOT_KEYS, 9) || !isCount(raw.base) || !isCount(raw.version)) {
      return undefined;
    }
    if (!isShortString(raw.model, Infinity, 1) || !("state" in raw)) return undefined;
    if (typeof raw.initialHash !== "string" || !/^[0-9a-f]{64}$/.test(raw.initialHash)) {
      return undefined;
    }
    if ("from" in raw && !isCount(raw.from)) return undefined;
    const { recent } = raw;
    if ("recent" in raw && !(Array.isArray(recent) && recent.length <= MAX_RECENT))
      return undefined;
    if (Array.isArray(recent) && !recent.every(isRecent)) return undefined;
    return raw as unknown as Entry;
  }
  if (raw.kind === "command") {
    if (!onlyKeys(raw, COMMAND_KEYS, 7) || !isSeed(raw.seed)) return undefined;
    if ("mv" in raw && !isCount(raw.mv)) return undefined;
    if (!isShortString(raw.name, 256, 1)) return undefined;
    return raw as unknown as Entry;
  }
  return undefined;
}
