/**
 * The model version a log is at, read from its entries: that of its last genesis, snapshot or
 * switch entry (docs/versions.md), and the version before its last switch (`from`, which switch
 * and snapshot entries carry and replicas use to read a command written without `mv`).
 */
import { decodeEntry, type JetStreamLog } from "@statesync/node";
import { readWhole } from "./whole-read.js";

/** Where the log's version comes from, as of one revision. */
export interface LogVersion {
  /** Model name and version of the last genesis, snapshot or switch entry. */
  readonly name: string;
  readonly version: number;
  /** The version before the log's last switch (undefined: none, or not recorded). */
  readonly from: number | undefined;
  /** That entry's kind and revision. */
  readonly kind: "genesis" | "snapshot" | "switch";
  readonly revision: number;
}

/**
 * Reads the retained entries up to `upTo` (default: the latest) and returns the log's version as
 * of there, or undefined when no retained entry names one. Malformed entries are passed over,
 * as every replica does. Throws what reading the log throws (`UNAVAILABLE`, ...).
 */
export async function readLogVersion(
  log: JetStreamLog,
  upTo?: number,
): Promise<LogVersion | undefined> {
  const info = await log.info();
  const to = Math.min(upTo ?? info.latestRevision, info.latestRevision);
  if (info.firstRevision === 0 || to < info.firstRevision) return undefined;
  let found: LogVersion | undefined;
  for await (const e of readWhole(log, info.firstRevision, to)) {
    const d = decodeEntry(e.data);
    if (!d.ok) continue;
    const x = d.entry;
    if (x.kind === "genesis" || x.kind === "snapshot" || x.kind === "switch") {
      const from = x.kind === "genesis" ? undefined : x.from;
      found = { name: x.model, version: x.version, from, kind: x.kind, revision: e.revision };
    }
  }
  return found;
}
