import { z } from "zod/v4";
import { TextDigest } from "../src/chunked.js";
import { Appender } from "../src/engine/appender.js";
import { OwnEntries } from "../src/engine/own-entries.js";
import { emptyStats, StatusHub } from "../src/engine/status.js";
import type { Entry } from "../src/entry.js";
import type { LogEntry, RevisionedLog } from "../src/log.js";
import { defineModel } from "../src/model.js";

/** Fixtures for unit tests of single engine parts (built from the sources, not dist). */
export const tinyModel = defineModel({
  name: "r",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});

const json = (o: unknown) => JSON.stringify(o);
/** The genesis entry of {@link tinyModel}, as stored. */
export const genesisText = json({
  v: 1,
  kind: "genesis",
  ts: 1,
  client: "g",
  model: "r",
  version: 1,
  initialHash: tinyModel.initialHash,
});
/**
 * The genesis entry of `model` at revision 1 (message id `g`, written by client `c` at
 * 1,700,000,000,000 ms), for replays of a test's own model.
 */
export function genesisEntryOf(model: {
  name: string;
  version: number;
  initialHash: string;
}): LogEntry {
  const { name, version, initialHash } = model;
  const entry = {
    v: 1,
    ts: 1_700_000_000_000,
    client: "c",
    kind: "genesis",
    model: name,
    version,
    initialHash,
  };
  return { revision: 1, data: new TextEncoder().encode(json(entry)), messageId: "g" };
}

/** An unconditional `inc` command, as stored. */
export const incText = json({
  v: 1,
  kind: "command",
  ts: 1,
  seed: 1,
  client: "o",
  name: "inc",
  args: {},
});
/** A snapshot entry of {@link tinyModel} at `base` holding `n`, as stored. */
export const snapshotText = (base: number, n: number) =>
  json({
    v: 1,
    kind: "snapshot",
    base,
    ts: 1,
    client: "c",
    model: "r",
    version: 1,
    initialHash: tinyModel.initialHash,
    state: { n },
  });
export const bytes = (text: string) => new TextEncoder().encode(text);

/** An unconditional `inc` command entry, decoded. */
export const incCommand = (n?: number): Entry => ({
  v: 1,
  kind: "command",
  ts: 1,
  seed: 1,
  client: "a",
  name: "inc",
  args: n === undefined ? {} : { n },
});

/** An `Appender` of client "a" on `log`, with no entries consumed yet; its stats and status. */
export function appenderOn(log: RevisionedLog) {
  const s = emptyStats();
  const status = new StatusHub();
  const history = { revision: 0, recordedFrom: Infinity, recentRevisionOf: () => undefined };
  const a = new Appender(log, new OwnEntries(), history, status, s, "a");
  return { a, s, status };
}

/**
 * The texts of the parts (part 0 empty, then `slices` slices of the state's JSON) and the
 * snapshot entry of a chunked snapshot of {@link tinyModel} holding `n`, based on `base`.
 */
export function chunkedTexts(id: string, base: number, n: number, slices = 3): string[] {
  const text = JSON.stringify({ n });
  const size = Math.ceil(text.length / slices);
  const data = Array.from({ length: slices }, (_, i) => text.slice(i * size, (i + 1) * size));
  const digest = new TextDigest();
  for (const d of data) digest.update(d);
  const head = { ts: 1, client: "c" };
  return [
    ...["", ...data].map((d, index) =>
      JSON.stringify({ v: 1, kind: "part", ...head, id, index, base, data: d }),
    ),
    JSON.stringify({
      v: 2,
      kind: "snapshot",
      ...head,
      base,
      model: "r",
      version: 1,
      initialHash: tinyModel.initialHash,
      parts: { id, count: slices + 1, bytes: digest.bytes, sha256: digest.hex() },
    }),
  ];
}
