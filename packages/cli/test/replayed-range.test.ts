import { describe, expect, it } from "vitest";
import { verifyLog } from "../src/commands/verify.js";
import type { AnyModel } from "../src/model-file.js";
import { withReplica } from "../src/replica.js";
import { replayedText } from "../src/verify-text.js";
import {
  counter,
  counterCommand,
  counterSnapshot,
  jetStreamLogAt,
  MODEL,
  runCli,
  runJson,
  seededCounter,
  target,
  useNatsServer,
} from "./helpers.js";

/**
 * `verify`'s `replayed` line names the revisions the replay went through. Before, it named the
 * first retained revision verify read before opening the replica, and printed `revisions 1 to 5`
 * for a replay that started at a later starting point: entries read past to a snapshot entry, or
 * the history before a compaction's snapshot entry truncated before the replica read the log.
 */
describe("statesync verify: the replayed range", () => {
  const ctx = useNatsServer();
  const model = counter as unknown as AnyModel;
  const note = (text: string) => counterCommand("note", { text });

  const logOf = (stream: string) => jetStreamLogAt(ctx.server.url, stream);

  it("starts at the snapshot entry the replica read past to, not at the first retained revision", async () => {
    const stream = await seededCounter(ctx.server.url, "RANGE", [
      note("a"), // 3
      counterSnapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
    ]);
    // The first retained entry (3) is a command: every replica reads past it to the snapshot (4).
    await (await logOf(stream)).truncateBefore(3);
    const text = await runCli(["verify", ...target(ctx.server.url, stream, "--model", MODEL)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^replayed\s+revisions 4 to 5$/m);
    const json = await runJson([
      "verify",
      ...target(ctx.server.url, stream, "--model", MODEL, "--json"),
    ]);
    expect(json).toMatchObject({ ok: true, firstRevision: 3, replayedFrom: 4, revision: 5 });
  });

  it("starts where the replica's read began when a compaction truncated the log before it", async () => {
    const stream = await seededCounter(ctx.server.url, "RANGE", [
      note("a"), // 3
      counterSnapshot(3, { count: 2, notes: ["a"] }), // 4
      note("b"), // 5
    ]);
    const log = await logOf(stream);
    const other = await logOf(stream);
    const report = await verifyLog(log, async (watched, use, onError) => {
      await other.truncateBefore(4); // after verify read the log's bounds, before the replay
      await withReplica(watched, model, (replica) => use(replica, model), onError);
    });
    expect(report).toMatchObject({ ok: true, firstRevision: 1, replayedFrom: 4, revision: 5 });
    expect(replayedText(report, undefined)).toBe("revisions 4 to 5");
  });

  it("still starts at revision 1 when nothing was skipped", async () => {
    const stream = await seededCounter(ctx.server.url, "RANGE", [note("a")]);
    const json = await runJson([
      "verify",
      ...target(ctx.server.url, stream, "--model", MODEL, "--json"),
    ]);
    expect(json).toMatchObject({ ok: true, firstRevision: 1, replayedFrom: 1, revision: 3 });
  });
});
