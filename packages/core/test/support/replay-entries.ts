import type { Entry, LogEntry } from "@statesync/core";
import { encodeEntry } from "../../src/entry.js";

/** Entries as a writer would append them, for replay tests (`EntryVerdicts`). */
const head = { v: 2, ts: 1, client: "c" } as const;

/** The genesis entry of `model`. */
export const genesisOf = (model: { name: string; initialHash: string }): Entry => ({
  ...head,
  kind: "genesis",
  model: model.name,
  version: 1,
  initialHash: model.initialHash,
});

/** A conditional update based on `base` that sets `n` to `value`. */
export const updateOfN = (base: number, value: number): Entry => ({
  ...head,
  kind: "update",
  base,
  seed: 1,
  patches: [{ op: "replace", path: ["n"], value }],
});

/** `e` stored at `revision`. */
export const at = (revision: number, e: Entry): LogEntry => ({ revision, data: encodeEntry(e) });
