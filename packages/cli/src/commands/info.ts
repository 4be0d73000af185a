/**
 * `statesync info`: what a stream holds for one state: the model and the version the log is at
 * (from its last genesis, snapshot or switch entry), the latest revision, the retained
 * entries and their bytes, those every replica skips as malformed and where every replica stops
 * (chain.ts), the last snapshot entry, and whether the stream's configuration is safe. An unsafe
 * configuration (limits that drop history: the log refuses it with `STREAM_CONFIG`) is
 * reported, with the stream's own counters, instead of failing.
 */
import type { Command } from "commander";
import {
  decodeEntry,
  resolveLayout,
  streamConfigProblems,
  streamConfigWarnings,
  type JetStreamLog,
  type StreamConfigLike,
} from "@statesync/node";
import { action } from "../action.js";
import { ChainCheck, type ChainEvent } from "../chain.js";
import { keyOnOwnStream, ownStreamOf, sharedWithoutKey } from "../layout-check.js";
import { addCommonOptions, parseCommon } from "../options.js";
import { block, printJson, printLines } from "../output.js";
import { streamInfo, withLog, withSession, type Session } from "../session.js";
import { withSameHistory } from "../same-history.js";
import { readWhole } from "../whole-read.js";

/** The `--json` output of `info`. */
export interface InfoReport {
  stream: string;
  subject: string;
  layout: "own" | "shared";
  serverVersion: string;
  /**
   * The model the log is at: that of its last genesis, snapshot or switch entry (`from`: which
   * kind, at which revision); null when none could be read.
   */
  model: {
    name: string;
    version: number;
    initialHash: string;
    from: string;
    revision: number;
  } | null;
  /** Latest revision (0: the state never had an entry). */
  revision: number;
  /** First retained revision (0: none retained). */
  firstRevision: number;
  /** Retained entries of this state. */
  entries: number;
  /** Their size: bytes of the entries (own layout with an unsafe configuration: the stream's). */
  bytes: number | null;
  /**
   * Entries every replica skips as malformed (`CORRUPT_ENTRY`) before `stop`, whatever its model:
   * those that do not decode, a conditional update based on another revision than the entry
   * before it, a second genesis entry (see chain.ts; `verify` finds these and what the model
   * decides).
   */
  malformed: number;
  /** The first of them: its revision and why. */
  firstMalformed: ChainEvent | null;
  /** Where every replica stops (a newer format, a gap, an unusable first entry), or null. */
  stop: ChainEvent | null;
  /** The last snapshot entry retained. */
  lastSnapshot: { revision: number; base: number } | null;
  /** True when the stream cannot drop history (see `streamConfigProblems`). */
  configSafe: boolean;
  configProblems: string[];
  /** What makes a usable stream unsafe (see `streamConfigWarnings`: `deny_delete` off). */
  configWarnings: string[];
  /** What the log means for the state itself: a log that retains none of it (`emptied`). */
  warnings: string[];
}

/** What `info` reads from the log's entries (the rest of {@link InfoReport} is the stream's). */
export type LogScan = Pick<
  InfoReport,
  | "revision"
  | "firstRevision"
  | "entries"
  | "bytes"
  | "model"
  | "lastSnapshot"
  | "malformed"
  | "firstMalformed"
  | "stop"
>;

/**
 * Reads the log's bounds and every retained entry between them, from one retained history
 * (`withSameHistory`): a compaction landing between the bounds and the entries removed what the
 * read was to find, and `info` reported the old bounds with the entries after the truncation
 * (none at all when its snapshot entry came after the bounds: "the state is not in the log").
 * Throws what reading throws, and `TRUNCATED` when the log is truncated during every attempt.
 */
export function scanLog(log: JetStreamLog): Promise<LogScan> {
  return withSameHistory(log, () => scanOnce(log));
}

async function scanOnce(log: JetStreamLog): Promise<LogScan> {
  const info = await log.info();
  const scan: LogScan = {
    revision: info.latestRevision,
    firstRevision: info.firstRevision,
    entries: 0,
    bytes: 0,
    model: null,
    lastSnapshot: null,
    malformed: 0,
    firstMalformed: null,
    stop: null,
  };
  if (info.firstRevision === 0) return scan;
  const chain = new ChainCheck(log.contiguous);
  let bytes = 0;
  for await (const e of readWhole(log, info.firstRevision, info.latestRevision)) {
    if (e.skipped) {
      chain.stepOver(e.revision); // a sequence the server used up: no entry (LogEntry.skipped)
      continue;
    }
    scan.entries += 1;
    bytes += e.data.byteLength;
    const d = decodeEntry(e.data);
    chain.step(e.revision, d);
    if (!d.ok) continue;
    const x = d.entry;
    if (x.kind === "snapshot") scan.lastSnapshot = { revision: e.revision, base: x.base };
    // The log is at the model version of its last genesis, snapshot or switch entry.
    if (x.kind === "genesis" || x.kind === "snapshot" || x.kind === "switch") {
      const { model: name, version, initialHash } = x;
      scan.model = { name, version, initialHash, from: x.kind, revision: e.revision };
    }
  }
  chain.end();
  return {
    ...scan,
    bytes,
    malformed: chain.malformed,
    firstMalformed: chain.firstMalformed,
    stop: chain.stop,
  };
}

/**
 * A state's own stream holding messages on other subjects (a subject added, a message published,
 * the subjects restored): replicas read only the state's subject, so such a message is a gap
 * they stop at (`TRUNCATED`) unless a snapshot entry follows it. Before, `info` said "safe" while
 * `verify` and every replica stopped there (fresh-eyes trial, stop 25). `num_subjects`: the
 * number of subjects with messages (nats-server 2.9+).
 */
function foreignSubjects(state: { num_subjects?: number }, layout: Session["layout"]): string[] {
  const n = state.num_subjects ?? 1;
  if (layout.shared || n <= 1) return [];
  return [
    `the stream holds messages on ${n} subjects, not only ${layout.subject}: replicas read that subject only, and stop (TRUNCATED) at a message on another one unless a snapshot entry follows it`,
  ];
}

/** Reads everything `info` reports. */
export async function readInfo(s: Session): Promise<InfoReport> {
  const si = await streamInfo(s);
  // --key on a stream of one state: its layout is reported as the stream's, with the problem.
  const own = ownStreamOf(si.config.subjects, s.layout);
  // A shared stream read without --key (warned below) is checked as a shared stream: it read
  // "UNSAFE: subjects are not exactly S.log" beside the warning (a trial).
  const asShared = sharedWithoutKey(si.config.subjects, s.layout).length > 0;
  const checked = asShared
    ? resolveLayout(s.layout.stream, "key", s.layout.subject.slice(0, -".log".length))
    : s.layout;
  const problems =
    own === undefined
      ? streamConfigProblems(si.config as StreamConfigLike, checked)
      : [keyOnOwnStream(own, s.layout.key!)];
  const report: InfoReport = {
    stream: s.layout.stream,
    subject: (own ?? s.layout).subject,
    layout: (own ?? s.layout).shared ? "shared" : "own",
    serverVersion: s.serverVersion,
    model: null,
    revision: 0,
    firstRevision: 0,
    entries: 0,
    bytes: 0,
    malformed: 0,
    firstMalformed: null,
    stop: null,
    lastSnapshot: null,
    configSafe: problems.length === 0,
    configProblems: problems,
    configWarnings: [
      ...streamConfigWarnings(si.config as StreamConfigLike),
      ...foreignSubjects(si.state, checked),
    ],
    warnings: [],
  };
  // A sealed stream is unsafe to write but whole: its entries are read as any other's.
  if (
    own === undefined &&
    streamConfigProblems(si.config as StreamConfigLike, s.layout, { readOnly: true }).length === 0
  ) {
    Object.assign(report, await withLog(s, scanLog));
  } else if (!(own ?? s.layout).shared) {
    // The log refuses this stream; the stream's own counters still say what it holds.
    report.revision = si.state.last_seq;
    report.firstRevision = si.state.messages === 0 ? 0 : si.state.first_seq;
    report.entries = si.state.messages;
    report.bytes = si.state.bytes;
  } else {
    report.bytes = null;
  }
  report.warnings = [...emptied(report), ...sharedWithoutKey(si.config.subjects, s.layout)];
  return report;
}

/** A `label  what N: CODE: problem` line, when there is an event. */
function event(label: string, e: ChainEvent | null, what: string): Array<[string, string]> {
  return e === null ? [] : [[label, `${what} ${e.revision}: ${e.code}: ${e.problem}`]];
}

/**
 * The first retained revision, or, when none is (a stream purged whole, or never written),
 * what happened to the revisions before (the JSON report keeps `firstRevision: 0`).
 */
function firstRetained(r: InfoReport): string {
  if (r.firstRevision > 0) return String(r.firstRevision);
  if (r.revision === 0) return "none (nothing was ever appended)";
  const removed = r.revision === 1 ? "revision 1 was" : `revisions 1-${r.revision} were`;
  return `none (${removed} purged or truncated away; the next entry is ${r.revision + 1})`;
}

/**
 * On a log that retains nothing after holding entries (a stream purged whole), what that means
 * for the next replica (docs/guarantees.md, purges): operators look here (a fresh-eyes trial),
 * and scripts in `--json`'s `warnings` (a later trial found it in the text only).
 */
function emptied(r: InfoReport): string[] {
  if (r.firstRevision > 0 || r.revision === 0) return [];
  return [
    "the state is not in the log: a replica without a local snapshot starts from the model's initial state; a live replica holding the state that compacts then writes it back",
  ];
}

function text(r: InfoReport): string[] {
  const model = r.model
    ? `${r.model.name} v${r.model.version} (from the ${r.model.from} entry at revision ${r.model.revision})`
    : r.entries === 0
      ? "unknown (the log holds no entries)"
      : "unknown (no genesis or snapshot entry read)";
  const snapshot = r.lastSnapshot
    ? `revision ${r.lastSnapshot.revision} (state at base ${r.lastSnapshot.base})`
    : "none";
  const config = !r.configSafe
    ? `UNSAFE (STREAM_CONFIG): ${r.configProblems.join("; ")}`
    : r.configWarnings.length > 0
      ? `usable, with a warning (STREAM_CONFIG): ${r.configWarnings.join("; ")}`
      : "safe (no limit drops history)";
  return block([
    ["stream", `${r.stream} (${r.layout} layout, subject ${r.subject})`],
    ["server", r.serverVersion],
    ["model", model],
    ["revision", String(r.revision)],
    ["first retained", firstRetained(r)],
    ...r.warnings.map((w): [string, string] => ["warning", w]),
    ["entries", `${r.entries} retained${r.malformed > 0 ? `, ${r.malformed} malformed` : ""}`],
    ...event("malformed", r.firstMalformed, "skipped by every replica; the first at revision"),
    ...event("replay stops", r.stop, "at revision"),
    ["bytes", r.bytes === null ? "unknown" : String(r.bytes)],
    ["last snapshot", snapshot],
    ["configuration", config],
    // An unsafe stream's warnings too (a fresh-eyes trial found only its problems printed).
    ...(r.configSafe ? [] : r.configWarnings.map((w): [string, string] => ["config warning", w])),
  ]);
}

/** Adds `info` to `program`. */
export function registerInfo(program: Command): void {
  addCommonOptions(
    program
      .command("info")
      .description("model, revision, retained entries and bytes, last snapshot, configuration"),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const report = await withSession(o, readInfo);
      if (o.json) printJson(report);
      else printLines(text(report));
    }),
  );
}
