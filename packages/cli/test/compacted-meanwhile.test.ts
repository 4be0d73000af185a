import { fileURLToPath } from "node:url";
import { encodeEntry, JetStreamLog, openSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { readBackupSource } from "../src/commands/export.js";
import { readHistory } from "../src/commands/history.js";
import { scanLog } from "../src/commands/info.js";
import { readStateOf, stateAtRetained } from "../src/commands/state.js";
import { verifyLog } from "../src/commands/verify.js";
import { loadModel, type AnyModel } from "../src/model-file.js";
import { withReplica } from "../src/replica.js";
import { notCheckedText } from "../src/verify-text.js";
import {
  counter,
  counterCommand,
  counterSnapshot,
  jetStreamLogAt,
  MODEL,
  openCounter,
  runCli,
  seededCounter,
  target,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

const MODEL_V2 = fileURLToPath(new URL("./fixtures/counter-v2.mjs", import.meta.url));

/**
 * History removed while `verify` runs (a live replica's compaction, an operator's purge) is no
 * problem of the log. Found by a new-user trial: 6 of 37 runs of `verify` beside live replicas
 * that compacted read `DIVERGES`, `TRUNCATED: revision 5142: revision 5141 is before the retained
 * history (the first retained revision is 5142)` for a healthy log: the snapshot entry a
 * compaction wrote before verify started was checked against the replay at its base after the
 * same compaction had removed that base. Here the truncation happens deterministically between
 * the replay and the starting-point check (the replica is handed over once caught up).
 */
describe("statesync verify and state --at while the log is compacted", () => {
  const ctx = useNatsServer();
  const model = counter as unknown as AnyModel;
  const snapshot = counterSnapshot;
  const note = (text: string) => counterCommand("note", { text });

  const logOf = (stream: string) => jetStreamLogAt(ctx.server.url, stream);

  /** Verifies `stream`, running `meanwhile` once the replica has replayed the log. */
  async function verifyWhile(stream: string, meanwhile: (log: JetStreamLog) => Promise<void>) {
    const log = await logOf(stream);
    const other = await logOf(stream); // another client's: the compacting replica's
    return verifyLog(log, (watched, use, onError) =>
      withReplica(
        watched,
        model,
        async (replica) => {
          await meanwhile(other);
          return use(replica, model);
        },
        onError,
      ),
    );
  }

  it("does not call a snapshot entry's base that a compaction removed meanwhile a divergence", async () => {
    // A compaction's two steps: its snapshot entry (4) is written before verify starts, the
    // history before it is removed once verify has replayed it.
    const stream = await seededCounter(ctx.server.url, "VMEAN", [
      note("a"), // 3
      snapshot(3, { count: 2, notes: ["a"] }), // 4: what the replay has at 3
      note("b"), // 5
    ]);
    const report = await verifyWhile(stream, (log) => log.truncateBefore(4));
    expect(report).toMatchObject({
      ok: true,
      result: "ok",
      revision: 5,
      firstRevision: 1,
      snapshotsChecked: 0,
      notChecked: 1,
      divergence: null,
      divergences: 0,
      problems: [],
    });
    // The text output's `not checked` line.
    expect(notCheckedText(report)).toBe(
      "1 snapshot or switch entry: the history at its base was removed while verify ran (a compaction or a purge); run verify again to check the log as it is now",
    );
  });

  it("passes a log another replica compacts whole once verify has replayed it", async () => {
    const stream = await seededCounter(ctx.server.url, "VMEAN", [
      note("a"), // 3
      snapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
    ]);
    const report = await verifyWhile(stream, async () => {
      const replica = await openCounter(ctx.server.url, stream);
      expect((await replica.compact()).revision).toBe(6); // the log now starts at 6
      await replica.close();
    });
    expect(report).toMatchObject({ ok: true, result: "ok", revision: 5, divergences: 0 });
  });

  it("still checks the starting points whose base is retained, and reports a real divergence", async () => {
    const stream = await seededCounter(ctx.server.url, "VMEAN", [
      note("a"), // 3
      snapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
      snapshot(5, { count: 99, notes: ["a", "b"] }), // 6: differs from the replay
    ]);
    const report = await verifyWhile(stream, (log) => log.truncateBefore(4));
    expect(report).toMatchObject({
      ok: false,
      result: "diverges",
      snapshotsChecked: 1,
      notChecked: 1,
      divergences: 1,
      divergence: { revision: 6, code: "CORRUPT_ENTRY" },
    });
  });

  it("still reports a base that was before the retained history when verify started", async () => {
    // Not removed meanwhile: the log lacked it all along (no replica can check the entry).
    const stream = await seededCounter(ctx.server.url, "VMEAN", [
      note("a"), // 3
      snapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
      snapshot(2, { count: 2, notes: [] }), // 6: its base is gone
    ]);
    const log = await logOf(stream);
    await log.truncateBefore(4);
    const r = await runCli(["verify", ...target(ctx.server.url, stream, "--model", MODEL)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/result\s+DIVERGES/);
    expect(r.stderr.trim()).toBe(
      "statesync: TRUNCATED: revision 6: revision 2 is before the retained history (the first retained revision is 4)",
    );
    const json = await runCli([
      "verify",
      ...target(ctx.server.url, stream, "--model", MODEL, "--json"),
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({ result: "diverges", notChecked: 0 });
  });

  it("state --at a revision a compaction removed meanwhile says so, not that it was never retained", async () => {
    const stream = await seededCounter(ctx.server.url, "VMEAN", [
      note("a"), // 3
      snapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
    ]);
    const log = await logOf(stream);
    const other = await logOf(stream);
    // The compaction's truncation lands right after the command read the log's bounds.
    const info = log.info.bind(log);
    let once = true;
    log.info = async () => {
      const read = await info();
      if (once) {
        once = false;
        await other.truncateBefore(4);
      }
      return read;
    };
    await expect(stateAtRetained(log, model, 3)).rejects.toMatchObject({
      code: "TRUNCATED",
      message:
        "revision 3 was removed while the command ran (a compaction or a purge; the first retained revision is now 4): its state is no longer in the log; run the command again with a retained revision",
      details: { revision: 3, firstRevision: 4 },
    });
    // Before the retained history when it started: as before.
    await expect(stateAtRetained(log, model, 2)).rejects.toMatchObject({
      code: "TRUNCATED",
      message: "revision 2 is before the retained history (the first retained revision is 4)",
    });
    expect(await stateAtRetained(log, model, 5)).toEqual({ count: 2, notes: ["a", "b"] });
  });

  /** A counter log switched to version 2: genesis (1), increment by 3 (2), switch from 1 (3). */
  async function switchedLog(): Promise<string> {
    const stream = uniqueStream("XMEAN");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 });
    await a.close();
    const migrate = await runCli([
      "migrate",
      ...target(ctx.server.url, stream, "--model", MODEL_V2),
    ]);
    expect(migrate.code).toBe(0);
    return stream;
  }

  /**
   * A live replica of `v2` compacting `stream` (its snapshot entry, then the truncation), after
   * an update when `write`.
   */
  async function compactV2(stream: string, v2: AnyModel, write = false): Promise<number> {
    const replica = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: v2,
      snapshots: false,
      live: false,
      compaction: false,
    });
    try {
      if (write) await replica.update("tag", { tag: "x" });
      return (await replica.compact()).revision;
    } finally {
      await replica.close();
    }
  }

  it("export keeps a switched log's from when a compaction lands between the state and the version read", async () => {
    // Before, the version was read after the state, from the entries up to the state's revision:
    // a compaction in between had removed all of them, and the backup had no `from`.
    const stream = await switchedLog();
    const v2 = await loadModel(MODEL_V2);
    const log = await logOf(stream);
    let compacted = 0;
    const source = await readBackupSource(log, v2, undefined, async (l, m, at) => {
      const read = await readStateOf(l, m, at);
      if (compacted === 0) compacted = await compactV2(stream, v2);
      return read;
    });
    expect(compacted).toBe(4); // the log now starts at the compaction's snapshot entry
    expect(source).toEqual({ revision: 4, from: 1, state: { count: 3, notes: [], tags: [] } });
  });

  it("export says TRUNCATED when every attempt's reads are split by a compaction", async () => {
    const stream = await switchedLog();
    const v2 = await loadModel(MODEL_V2);
    const log = await logOf(stream);
    const read = readBackupSource(log, v2, undefined, async (l, m, at) => {
      const state = await readStateOf(l, m, at);
      await compactV2(stream, v2, true); // an update, then a compaction past it
      return state;
    });
    await expect(read).rejects.toMatchObject({
      code: "TRUNCATED",
      message:
        "the log was truncated (a compaction or a purge) while the command read it, 3 times in a row (the first retained revision went from 7 to 9): what it read would not agree; run it again",
    });
  });

  /**
   * A log at revision 4 whose next range read is preceded, once, by a compaction's two steps:
   * its snapshot entry (5), then the truncation before it (right after a command read the
   * log's bounds, 1 to 4).
   */
  async function compactedBeforeRead(prefix: string): Promise<JetStreamLog> {
    const stream = await seededCounter(ctx.server.url, prefix, [note("a"), note("b")]); // 3, 4
    const log = await logOf(stream);
    const other = await logOf(stream);
    const read = log.read.bind(log);
    let once = true;
    log.read = (from: number, to: number) => {
      if (!once) return read(from, to);
      once = false;
      return (async function* () {
        await other.appendUnconditional(
          encodeEntry(counterSnapshot(4, { count: 2, notes: ["a", "b"] })),
          "compaction",
        );
        await other.truncateBefore(5);
        yield* read(from, to);
      })();
    };
    return log;
  }

  it("info reads the bounds and the entries of one retained history when a compaction lands between", async () => {
    // Before, info reported revisions 1 to 4 retained with no entry read: "the state is not in
    // the log", model unknown.
    const log = await compactedBeforeRead("IMEAN");
    expect(await scanLog(log)).toMatchObject({
      revision: 5,
      firstRevision: 5,
      entries: 1,
      model: { name: "counter", version: 1, from: "snapshot", revision: 5 },
      lastSnapshot: { revision: 5, base: 4 },
      malformed: 0,
      stop: null,
    });
  });

  it("history lists the entries of one retained history when a compaction lands between", async () => {
    // Before, history read no entry between the old bounds: "no retained entries in that range".
    const log = await compactedBeforeRead("HMEAN");
    const read = await readHistory(log, {});
    expect(read).toMatchObject({ empty: false, warning: undefined });
    expect(read.rows.map((r) => [r.revision, r.kind])).toEqual([[5, "snapshot"]]);
  });
});
