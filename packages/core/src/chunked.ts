/**
 * Chunked snapshots (docs/format.md, "Chunked snapshots"): a state whose snapshot entry would not
 * fit in one log entry is written as part entries, slices of its JSON text, followed by a
 * snapshot entry naming them (`parts: { id, count, bytes, sha256 }`). This file holds the pure
 * pieces both sides share: hashing the text, assembling the parts and checking them against the
 * snapshot entry (reader), and parsing the joined text with the checks `decodeEntry` applies to
 * one entry's text. Slicing the text is the writer's (`sliceText`, engine/chunked-writer.ts).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import {
  hasProtoKey,
  jsonNestingDepth,
  MAX_CHUNKED_BYTES,
  MAX_NESTING_DEPTH,
  type PartEntry,
  type SnapshotParts,
} from "./entry.js";
import { nestedDeeperThan } from "./nesting.js";

const encoder = new TextEncoder();

interface Sha256 {
  update(data: Uint8Array): void;
  hex(): string;
}

/**
 * Node's native SHA-256 when the runtime offers it synchronously (`process.getBuiltinModule`,
 * Node 20.16+), about four times faster than the portable one on a 100 MB state; else
 * `@noble/hashes` (browsers, older Node). Both compute the same digest.
 */
function createSha256(): Sha256 {
  const get = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
    ?.getBuiltinModule;
  if (typeof get === "function") {
    try {
      const crypto = get("node:crypto") as {
        createHash(a: string): { update(d: Uint8Array): void; digest(e: "hex"): string };
      };
      const h = crypto.createHash("sha256");
      return { update: (d) => h.update(d), hex: () => h.digest("hex") };
    } catch {
      // fall through to the portable one
    }
  }
  const h = sha256.create();
  return { update: (d) => void h.update(d), hex: () => bytesToHex(h.digest()) };
}

/** A running SHA-256 and byte count of UTF-8 text fed in slices. */
export class TextDigest {
  private readonly hash = createSha256();
  /** UTF-8 bytes fed so far. */
  bytes = 0;

  update(slice: string): void {
    const data = encoder.encode(slice);
    this.bytes += data.byteLength;
    this.hash.update(data);
  }

  private digest: string | undefined;

  /** 64 lowercase hex digits (nothing may be fed after this). */
  hex(): string {
    this.digest ??= this.hash.hex();
    return this.digest;
  }
}

/**
 * The parts of one chunked snapshot as a reader meets them: index 0 first, then 1, 2, ... in log
 * order (one writer appends them one after the other). Anything else (a missing or repeated
 * index, text past {@link MAX_CHUNKED_BYTES}) breaks the assembly: its slices are dropped at once
 * and the snapshot entry naming it is refused.
 */
export class PartAssembly {
  /** Why the parts cannot make a state, once they cannot. */
  broken: string | undefined;
  private slices: string[] = [];
  private readonly digest = new TextDigest();

  constructor(
    readonly id: string,
    /** The revision whose state the parts hold. */
    readonly base: number,
    /** Revision of the part with index 0. */
    readonly start: number,
  ) {}

  /** The parts taken so far (the index the next one must have); 0 once broken. */
  get count(): number {
    return this.slices.length;
  }

  /** UTF-8 bytes of the slices held. */
  get bytes(): number {
    return this.broken === undefined ? this.digest.bytes : 0;
  }

  /** Takes the next part (the one with index 0 included). */
  add(part: PartEntry): void {
    if (this.broken !== undefined) return;
    if (part.index !== this.slices.length) {
      return this.break(`part ${part.index} came where part ${this.slices.length} was expected`);
    }
    if (part.base !== this.base) return this.break(`part ${part.index} names another base`);
    this.digest.update(part.data);
    if (this.digest.bytes > MAX_CHUNKED_BYTES) {
      return this.break(`its parts exceed ${MAX_CHUNKED_BYTES} bytes`);
    }
    this.slices.push(part.data);
  }

  /** Drops the slices (memory) and records why. */
  break(reason: string): void {
    this.broken ??= reason;
    this.slices = [];
  }

  /**
   * The state's JSON text when the parts match `parts` (count, bytes, SHA-256), else why not.
   * Releases the slices either way.
   */
  finish(parts: SnapshotParts): { ok: true; text: string } | { ok: false; reason: string } {
    const slices = this.slices;
    this.slices = [];
    if (this.broken !== undefined) return { ok: false, reason: this.broken };
    if (slices.length !== parts.count) {
      return { ok: false, reason: `${slices.length} of its ${parts.count} parts are in the log` };
    }
    if (this.digest.bytes !== parts.bytes) {
      return { ok: false, reason: `its parts hold ${this.digest.bytes} bytes, not ${parts.bytes}` };
    }
    if (this.digest.hex() !== parts.sha256) {
      return { ok: false, reason: "its parts do not match its sha256" };
    }
    this.broken = "already used";
    return { ok: true, text: slices.join("") };
  }
}

/**
 * The state the parts of `assembly` hold, when they match `parts` and parse: the joined text
 * lives only inside this call, so it is garbage before the caller validates the value (peak
 * memory: the slices and the text, then the text and the value, never all three).
 */
export function assembledState(
  assembly: PartAssembly,
  parts: SnapshotParts,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  const finished = assembly.finish(parts);
  return finished.ok ? parseStateText(finished.text) : finished;
}

/**
 * Parses a chunked snapshot's joined text with the checks one entry's text gets in
 * `decodeEntry`: nesting depth (iteratively, before `JSON.parse`), JSON, no `__proto__` key.
 */
export function parseStateText(
  text: string,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  const deep = textTooDeep(text);
  if (deep !== undefined) return { ok: false, reason: deep };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: "its state is not JSON" };
  }
  if (hasProtoKey(text, value)) return { ok: false, reason: "an object key is __proto__" };
  return { ok: true, value };
}

/**
 * Why a reader would refuse `text` as a chunked snapshot's state ({@link parseStateText}), for a
 * writer holding `value`, the JSON value `text` is the `JSON.stringify` of: what a reader parses
 * from it equals `value`, so the same checks give the same verdict without parsing it again
 * (`checkOwnEntry` does the same for one entry). Undefined: every reader accepts it.
 */
export function ownStateTextProblem(text: string, value: unknown): string | undefined {
  return textTooDeep(text) ?? (hasProtoKey(text, value) ? "an object key is __proto__" : undefined);
}

function textTooDeep(text: string): string | undefined {
  if (text.length > MAX_NESTING_DEPTH && jsonNestingDepth(text, MAX_NESTING_DEPTH) < 0) {
    return `its state is nested deeper than ${MAX_NESTING_DEPTH}`;
  }
  return undefined;
}

/**
 * The last chunked snapshot entry a replay passed over, taking its own state as the one the
 * parts hold (`Replay.verifiedStart`): whether that is so is checked once, when a compaction would
 * truncate before it, by the SHA-256 and byte count of the JSON text of the state the replay
 * stood on at the snapshot's base (`state`, undefined when it did not stand there: unchecked).
 */
export class PassedChunked {
  private passed: { parts: SnapshotParts; start: number | undefined; state: unknown } | undefined;
  private ok: boolean | undefined;

  pass(parts: SnapshotParts, start: number | undefined, state: unknown): void {
    this.passed = { parts, start, state };
    this.ok = start !== undefined && state !== undefined ? undefined : false;
  }

  clear(): void {
    this.passed = undefined;
  }

  /** `lastStart` unless it is this snapshot's start and its parts do not hold that state. */
  verified(lastStart: number | undefined): number | undefined {
    const p = this.passed;
    if (p === undefined || p.start !== lastStart) return lastStart;
    if (this.ok === undefined) {
      // Readers join the parts and parse them (`parseStateText`): parts they would refuse (a
      // state nested too deep, written by an older SDK) are no starting point either, whatever
      // their hash says. The depth is walked first: the text of a state nested thousands of
      // levels deep cannot even be made (JSON.stringify overflows the stack).
      if (nestedDeeperThan(p.state, MAX_NESTING_DEPTH)) this.ok = false;
      else {
        const text = JSON.stringify(p.state);
        const digest = new TextDigest();
        digest.update(text);
        this.ok =
          digest.bytes === p.parts.bytes &&
          digest.hex() === p.parts.sha256 &&
          ownStateTextProblem(text, p.state) === undefined;
      }
      p.state = undefined; // the verdict is kept; the old state need not be
    }
    return this.ok ? lastStart : undefined;
  }
}
