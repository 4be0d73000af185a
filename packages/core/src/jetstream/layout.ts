import { StateSyncError } from "../errors.js";

/**
 * Where one state lives in JetStream: its stream, its one subject and the subjects a stream
 * created for it gets. Built and validated by {@link resolveLayout}.
 */
export interface JetStreamLayout {
  readonly stream: string;
  /** The key in the shared layout; undefined when the state owns the stream. */
  readonly key: string | undefined;
  /** The one subject this state's entries are published on. */
  readonly subject: string;
  /** `subjects` of a stream created for this layout. */
  readonly streamSubjects: readonly string[];
  /** True when many states share the stream (one subject each). */
  readonly shared: boolean;
}

const KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
// NATS stream names: no whitespace, no `.`, `*`, `>`, path separators or control characters.
// eslint-disable-next-line no-control-regex
const STREAM = /^[^\s.*>/\\\u0000-\u001f\u007f]+$/;
// eslint-disable-next-line no-control-regex
const TOKEN = /^[^\s.*>\u0000-\u001f\u007f]+$/;

/** Longest key accepted, in characters. */
export const MAX_KEY_LENGTH = 256;

/** True when `name` is a valid JetStream stream name (at most 255 characters). */
export function isValidStreamName(name: unknown): name is string {
  return typeof name === "string" && name.length <= 255 && STREAM.test(name);
}

/** True when `key` is one or more dot-separated tokens of `[A-Za-z0-9_-]`. */
export function isValidKey(key: unknown): key is string {
  return typeof key === "string" && key.length <= MAX_KEY_LENGTH && KEY.test(key);
}

/** Longest subject prefix accepted, in characters. */
const MAX_PREFIX_LENGTH = 256;

/** Why `prefix` cannot begin a state's subjects (a clause: "it is empty"), or undefined. */
function subjectPrefixProblem(prefix: string): string | undefined {
  if (prefix.length === 0) return "it is empty";
  if (prefix.length > MAX_PREFIX_LENGTH) {
    return `it is longer than ${MAX_PREFIX_LENGTH} characters`;
  }
  if (prefix.startsWith("$")) {
    return "NATS reserves subjects starting with '$' for itself ($JS, $SYS, ...)";
  }
  if (!prefix.split(".").every((t) => TOKEN.test(t))) {
    return "its dot-separated tokens must be non-empty, without whitespace, wildcards ('*', '>') or control characters";
  }
  return undefined;
}

/** True when `prefix` is one or more dot-separated subject tokens without wildcards or `$`. */
export function isValidSubjectPrefix(prefix: unknown): prefix is string {
  return typeof prefix === "string" && subjectPrefixProblem(prefix) === undefined;
}

/** A value as a message shows it: a string quoted, anything else by its type. */
function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  return value === undefined ? "(none given)" : `(a ${value === null ? "null" : typeof value})`;
}

/**
 * Builds the layout of a state. Own-stream layout (no `key`): subject `<prefix>.log`, the stream
 * captures exactly that subject. Shared layout: subject `<prefix>.<key>`, a stream created for
 * it captures `<prefix>.>`. `prefix` defaults to the stream name.
 *
 * Throws `StateSyncError("VALIDATION")` for an invalid stream name, key or prefix.
 */
export function resolveLayout(
  stream: unknown,
  key?: unknown,
  subjectPrefix?: unknown,
): JetStreamLayout {
  if (!isValidStreamName(stream)) {
    throw new StateSyncError(
      "VALIDATION",
      `invalid stream name ${shown(stream)}: 1-255 characters, no whitespace, '.', '*', '>', '/' or '\\'`,
    );
  }
  if (key !== undefined && !isValidKey(key)) {
    throw new StateSyncError(
      "VALIDATION",
      `invalid key ${shown(key)}: one or more dot-separated tokens of [A-Za-z0-9_-], at most ${MAX_KEY_LENGTH} characters`,
    );
  }
  const prefix = subjectPrefix ?? stream;
  const problem = typeof prefix === "string" ? subjectPrefixProblem(prefix) : "it is not a string";
  if (problem !== undefined) {
    // Name what the user gave: a prefix, or else the stream whose name the subjects start with
    // (`stream: "$JS"` once read "invalid subject prefix undefined", found by a fresh-eyes trial).
    throw new StateSyncError(
      "VALIDATION",
      subjectPrefix === undefined
        ? `stream ${shown(stream)} cannot name its state's subjects: without a subjectPrefix they start with the stream name (${JSON.stringify(`${stream}.${key ?? "log"}`)}), and ${problem}; give a subjectPrefix`
        : `invalid subject prefix ${shown(subjectPrefix)}: ${problem}`,
    );
  }
  if (key === undefined) {
    const subject = `${prefix}.log`;
    return { stream, key: undefined, subject, streamSubjects: [subject], shared: false };
  }
  return {
    stream,
    key,
    subject: `${prefix}.${key}`,
    streamSubjects: [`${prefix}.>`],
    shared: true,
  };
}

/**
 * `RevisionedLog.identityPrefix` of the `JetStreamLog` at `layout`: `jetstream:<stream>:<subject>`
 * (the part of its `info().identity` before the last `@`). A log that wraps a `JetStreamLog` it
 * makes later (the tabs' log) gives the same prefix from the start.
 */
export function layoutIdentityPrefix(layout: Pick<JetStreamLayout, "stream" | "subject">): string {
  return `jetstream:${layout.stream}:${layout.subject}`;
}

/**
 * True when the NATS subject `pattern` matches `subject`, as nats-server matches a stream's
 * subjects: both are split on `.`; `*` matches exactly one token, `>` (last) one or more
 * trailing tokens, any other token only itself. Neither argument is validated (a malformed
 * subject simply does not match); never throws.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return p.length === s.length;
}
