import {
  CHECKED_COMMAND_FORMAT,
  createSynchronizer,
  encodeEntry,
  MemoryLog,
  type CommandEntry,
  type Draft,
  type UpdateContext,
} from "@statesync/node";
import { editingTrace, textModel, type Edit } from "./lib/text-trace.js";
import { WindowProfiler } from "./lib/profiler.js";
import { min } from "./lib/stats.js";

/** Edits of the trace (260,000, as the catch-up target is set on). */
export const TRACE_EDITS = 260_000;
/** Alternating rounds of catch-up and plain loop in the full run; the fastest of each counts. */
export const TRACE_ROUNDS = 5;

type TextState = { text: string };

/**
 * A fresh MemoryLog holding the genesis entry and the trace as unconditional command entries,
 * encoded as a writer encodes them (`encodeEntry`) but appended as another process would
 * (`injectRaw`): the replica measured here catches up with a log it did not write, as a fresh
 * replica does. Written by a synchronizer in this process instead, the catch-up cost 0.7 to
 * 1.5 µs more per entry (CPU time, alternating runs), and not for anything the replica does:
 * while the writer ran, V8 decided to allocate the objects of some allocation sites that the
 * writer and the replica share directly in the old generation (allocation-site pretenuring,
 * `--trace-pretenuring-statistics`), and the catch-up's scavenges then kept what those objects
 * pointed to; `--no-allocation-site-pretenuring` removed the difference.
 */
async function traceLog(edits: Edit[], v: 1 | 3 = CHECKED_COMMAND_FORMAT): Promise<MemoryLog> {
  const log = new MemoryLog({ maxEntryBytes: 16 * 1024 * 1024 });
  const genesis = await createSynchronizer({
    log,
    model: textModel,
    live: false,
    snapshots: false,
    compaction: false,
  });
  await genesis.close();
  const ts = Date.now();
  edits.forEach((e, i) => {
    const entry: CommandEntry = {
      v,
      kind: "command",
      ts: ts + Math.floor(i / 100),
      seed: (i * 2654435761) >>> 0,
      client: "trace-writer",
      name: e.command,
      args: e.args,
      mv: textModel.version,
    };
    log.injectRaw(encodeEntry(entry), `trace-writer-1-${i + 1}`);
  });
  return log;
}

/** A fresh replica (not live, no snapshots) catching up with the whole log; ms and state. */
async function catchUp(log: MemoryLog): Promise<{ ms: number; text: string; applied: number }> {
  const t = performance.now();
  const sync = await createSynchronizer({
    log: log.handle(),
    model: textModel,
    live: false,
    snapshots: false,
    compaction: false,
  });
  const ms = performance.now() - t;
  const r = { ms, text: sync.state.text, applied: sync.stats.entriesApplied };
  await sync.close();
  return r;
}

/** The commands' own `apply` functions in a plain loop on a plain object: no Immer, no log. */
function plainLoop(edits: Edit[]): { ms: number; text: string } {
  const ctx: UpdateContext = { revision: 0, timestamp: 0, random: () => 0.5, clientId: "plain" };
  const state: TextState = { text: "" };
  const draft = state as Draft<TextState>;
  const { insert, delete: del } = textModel.commands;
  const t = performance.now();
  for (const e of edits) {
    if (e.command === "insert") insert.apply(draft, e.args, ctx);
    else del.apply(draft, e.args, ctx);
  }
  return { ms: performance.now() - t, text: state.text };
}

/** What the trace measured. */
export interface TraceFigures {
  edits: number;
  finalLength: number;
  /** Entries in the log (the trace plus the genesis entry). */
  entries: number;
  catchUpMs: number;
  plainMs: number;
  catchUpRuns: number[];
  plainRuns: number[];
  /** (catch-up - plain loop) / edits, µs. */
  overheadUs: number;
  /** The same catch-up of the trace written as format 1 (commands applied unchecked). */
  uncheckedMs: number;
  uncheckedRuns: number[];
  /** (unchecked catch-up - plain loop) / edits, µs. */
  uncheckedOverheadUs: number;
}

/**
 * Catch-up overhead on a text-editing trace: a fresh replica catching up with `edits`
 * single-character inserts and deletes against the commands' `apply` in a plain loop,
 * alternating, the fastest of `rounds` each (the work is deterministic: noise only adds). Throws when the two end with different documents.
 */
export async function measureTrace(
  edits: number,
  rounds: number,
  progress: (m: string) => void,
): Promise<TraceFigures> {
  const trace = editingTrace(edits);
  progress(`text trace: appending ${trace.length} edits to a MemoryLog`);
  const log = await traceLog(trace);
  const unchecked = await traceLog(trace, 1);
  const catchUpRuns: number[] = [];
  const uncheckedRuns: number[] = [];
  const plainRuns: number[] = [];
  let finalLength = 0;
  let entries = 0;
  for (let round = 0; round < rounds; round++) {
    progress(`text trace: catch-up and plain loop ${round + 1}/${rounds}`);
    const c = await catchUp(log);
    const u = await catchUp(unchecked);
    const p = plainLoop(trace);
    if (c.text !== p.text || u.text !== p.text) {
      throw new Error("catch-up and plain loop ended with different texts");
    }
    catchUpRuns.push(c.ms);
    uncheckedRuns.push(u.ms);
    plainRuns.push(p.ms);
    finalLength = p.text.length;
    entries = c.applied;
  }
  const catchUpMs = min(catchUpRuns);
  const uncheckedMs = min(uncheckedRuns);
  const plainMs = min(plainRuns);
  return {
    ...{ edits, finalLength, entries, catchUpMs, plainMs, catchUpRuns, plainRuns },
    overheadUs: ((catchUpMs - plainMs) * 1000) / edits,
    ...{ uncheckedMs, uncheckedRuns },
    uncheckedOverheadUs: ((uncheckedMs - plainMs) * 1000) / edits,
  };
}

/** Task (`--cpu-prof apply`): profiles one catch-up of the trace into `file`. */
export async function traceProfileTask(p: { file: string; edits: number }): Promise<unknown> {
  const log = await traceLog(editingTrace(p.edits));
  await catchUp(log); // warm-up
  const profiler = new WindowProfiler();
  await profiler.start();
  const c = await catchUp(log);
  await profiler.stop(p.file);
  return {
    what: `a fresh replica catching up with ${p.edits} text edits on MemoryLog`,
    ops: c.applied,
    windowMs: c.ms,
  };
}
