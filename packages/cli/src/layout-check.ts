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

/** Throws `STREAM_CONFIG` when `--key` is given for a stream of one state (see above). */
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
}
