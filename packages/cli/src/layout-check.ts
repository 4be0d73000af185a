/**
 * The layout `--key` asks for, checked against the stream's subjects: a state's own stream
 * (subject `<prefix>.log`, one state) read with `--key` looked like a shared stream whose
 * subjects do not capture the key, and `info` printed `shared layout` for it (a trial), while the
 * other commands failed with a bare "subjects do not capture" line. The opposite, a shared
 * stream read without `--key`, is `info`'s `sharedWithoutKey` warning.
 */
import {
  resolveLayout,
  StateSyncError,
  subjectMatches,
  type JetStreamLayout,
} from "@statesync/node";

/**
 * The stream's own layout when `layout` names a key (`--key`) but the stream's `subjects` hold
 * a state's own subject and not the key's: the stream holds one state, not one per key.
 */
export function ownStreamOf(
  subjects: readonly string[] | undefined,
  layout: JetStreamLayout,
): JetStreamLayout | undefined {
  if (!layout.shared || layout.key === undefined) return undefined;
  const all = subjects ?? [];
  if (all.some((p) => subjectMatches(p, layout.subject))) return undefined;
  const prefix = layout.subject.slice(0, -(layout.key.length + 1));
  const own = resolveLayout(
    layout.stream,
    undefined,
    prefix === layout.stream ? undefined : prefix,
  );
  return all.some((p) => subjectMatches(p, own.subject)) ? own : undefined;
}

/** What is wrong with reading `own` (see {@link ownStreamOf}) with `--key key`. */
export function keyOnOwnStream(own: JetStreamLayout, key: string): string {
  return `stream ${own.stream} holds one state (own layout, subject ${own.subject}), not one state per key: --key ${key} does not apply; run the command without --key`;
}

/**
 * Throws `STREAM_CONFIG` when `--key` is given for a stream of one state (see above), or none
 * for a shared stream: `stream S is unsafe for statesync: subjects ["S.>"] are not exactly
 * ["S.log"]` sent operators looking for a broken stream (a trial); the message says to pass one.
 */
export function assertKeyFits(
  subjects: readonly string[] | undefined,
  layout: JetStreamLayout,
): void {
  const own = ownStreamOf(subjects, layout);
  if (own !== undefined) {
    throw new StateSyncError("STREAM_CONFIG", keyOnOwnStream(own, layout.key!), {
      details: { stream: own.stream, layout: "own" },
    });
  }
  // (A stream that also captures the state's own subject is an own stream with more subjects.)
  const shared = subjects?.includes(layout.subject) ? [] : sharedWithoutKey(subjects, layout, "");
  if (shared.length > 0) {
    throw new StateSyncError("STREAM_CONFIG", `stream ${layout.stream}: ${shared[0]}`, {
      details: { stream: layout.stream, layout: "shared" },
    });
  }
}

/**
 * Read without `--key`, a shared stream (subjects `<prefix>.>`, one state per key) looks like an
 * own stream with unsafe subjects, and `info` printed its counts as the subject's, which holds
 * nothing (a fresh-eyes trial): say what to pass instead (`info` warns, with `counts`; the other
 * commands refuse, {@link assertKeyFits}). Any subject ending in `.>` is taken
 * so: a shared stream with its own subject prefix does not start with the stream name.
 */
export function sharedWithoutKey(
  subjects: readonly string[] | undefined,
  layout: JetStreamLayout,
  counts = "; the revision, entries and bytes shown are the whole stream's",
): string[] {
  if (layout.shared) return [];
  const own = `${layout.subject.slice(0, -".log".length)}.>`;
  const wild = (subjects ?? []).filter((p) => p.endsWith(".>"));
  if (wild.length === 0) return [];
  const prefix = wild.includes(own)
    ? ""
    : " (and --subject-prefix: its subjects do not start with the stream name)";
  return [
    `the stream's subjects (${wild.join(", ")}) are those of a shared stream, which holds one state per key: read one with --key <key>${prefix}${counts}`,
  ];
}
