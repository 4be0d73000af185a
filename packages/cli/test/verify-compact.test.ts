import { JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counterCommand,
  counterSnapshot,
  MODEL,
  openCounter,
  runCli,
  seededCounter,
  runJson,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/** `statesync verify` and `statesync compact` against a real nats-server. */
describe("statesync verify and compact", () => {
  const ctx = useNatsServer();
  const where = (stream: string, ...more: string[]) =>
    target(ctx.server.url, stream, "--model", MODEL, ...more);

  const seeded = (extra: Array<Entry | Uint8Array> = []) =>
    seededCounter(ctx.server.url, "VERIFY", extra, "test");
  const snapshot = counterSnapshot;
  const common = { v: 1, ts: 1_700_000_000_000, client: "test" } as const;
  const command = counterCommand;

  it("passes a log that starts with entries before its snapshot entry (a purge undone in part)", async () => {
    // A trial (stop 36): after nats-server 2.10 was killed right after a compaction, the log
    // kept entries before the snapshot entry; replicas read past them to it, but the CLI called
    // the log TRUNCATED (info, state, export, compact) and verify DIVERGES (it checked the
    // snapshot entry the replay starts from against a replay before it).
    const stream = await seeded([
      command("note", { text: "a" }), // 3
      command("note", { text: "b" }), // 4
      snapshot(4, { count: 2, notes: ["a", "b"] }), // 5
      command("note", { text: "after" }), // 6
    ]);
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    await log.truncateBefore(4); // the first retained entry is the command at 4
    await log.close();
    await nc.close();
    const report = await runJson(["verify", ...where(stream)]);
    expect(report).toMatchObject({ ok: true, result: "ok", revision: 6, divergences: 0 });
    const state = await runJson(["state", ...where(stream)]);
    expect(state).toMatchObject({ revision: 6, state: { count: 2, notes: ["a", "b", "after"] } });
    const info = await runJson(["info", ...target(ctx.server.url, stream)]);
    expect(info).toMatchObject({ firstRevision: 4, stop: null });
  });

  it("passes a log whose entries all apply and whose snapshot entry matches the replay", async () => {
    const stream = await seeded([
      snapshot(2, { count: 2, notes: [] }), // 3: what the replay has at 2
      command("note", { text: "after" }), // 4
    ]);
    const report = await runJson(["verify", ...where(stream)]);
    expect(report).toEqual({
      ok: true,
      result: "ok",
      revision: 4,
      stoppedAt: null,
      firstRevision: 1,
      replayedFrom: 1,
      snapshotsChecked: 1,
      switchesChecked: 0,
      notChecked: 0,
      divergence: null,
      divergences: 0,
      problems: [],
      skipped: 0,
      partly: 0,
      refused: 0,
      invalidState: null,
      invalidSince: null,
    });
    const text = await runCli(["verify", ...where(stream)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/result\s+ok/);
  });

  it("exits 1 with the snapshot entry that differs from the replay and where", async () => {
    const stream = await seeded([snapshot(2, { count: 99, notes: [] })]);
    const r = await runCli(["verify", ...where(stream), "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ ok: false, divergences: 1 });
    expect(report.divergence).toMatchObject({ revision: 3, code: "CORRUPT_ENTRY" });
    expect(r.stderr.trim()).toBe(
      "statesync: CORRUPT_ENTRY: revision 3: the snapshot entry differs from the state replayed at its base 2: at /count the replay has 2, the snapshot 99",
    );
  });

  it("names an element or key the snapshot entry lacks (fresh-eyes trial: it read STOPS, not a JSON value)", async () => {
    const stream = await seeded([
      command("note", { text: "a" }), // 3
      snapshot(3, { count: 2, notes: [] }), // 4: lacks notes[0]
    ]);
    const r = await runCli(["verify", ...where(stream)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/result\s+DIVERGES/);
    expect(r.stderr.trim()).toBe(
      'statesync: CORRUPT_ENTRY: revision 4: the snapshot entry differs from the state replayed at its base 3: at /notes/0 the replay has "a", the snapshot nothing',
    );
  });

  it("reports the first of several problems: a malformed entry before a failing command", async () => {
    const stream = await seeded([
      new TextEncoder().encode("[1,2"), // 3: malformed, skipped by every replica
      command("boom", {}), // 4: its recipe throws
    ]);
    const r = await runCli(["verify", ...where(stream), "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.divergences).toBe(2);
    expect(report.divergence).toMatchObject({ revision: 3, code: "CORRUPT_ENTRY" });
    // All of them, which "1 more: --json" points to (before, --json had only their count).
    expect(
      report.problems.map((p: { revision: number; code: string }) => [p.revision, p.code]),
    ).toEqual([
      [3, "CORRUPT_ENTRY"],
      [4, "COMMAND_FAILED"],
    ]);
    expect(r.stderr).toMatch(
      /^statesync: CORRUPT_ENTRY: revision 3: malformed entry: invalid JSON/,
    );
    expect(r.stderr).toContain("(1 more: --json)");

    const only = await seeded([command("boom", {})]);
    const boom = await runCli(["verify", ...where(only)]);
    expect(boom.code).toBe(1);
    expect(boom.stderr).toMatch(/^statesync: COMMAND_FAILED: revision 3: /);
    // A no-op in every replica alike: no replicas differ (it read DIVERGES before).
    expect(boom.stdout).toMatch(/result\s+SKIPS 1 entry \(every replica alike\)/);
  });

  it("says the state is invalid also when entries were skipped (fresh-eyes trial), and state warns", async () => {
    const invalidUpdate = {
      ...common,
      kind: "update",
      base: 2,
      seed: 1,
      patches: [{ op: "replace", path: ["count"], value: 1.5 }],
    } as Entry; // 3: applied, the count is no longer an integer
    const stream = await seeded([invalidUpdate, new TextEncoder().encode("[1,2")]); // 4: skipped
    const text = await runCli(["verify", ...where(stream)]);
    expect(text.code).toBe(1);
    // Before: "SKIPS 1 entry (every replica alike)" alone; the invalid state only in --json.
    expect(text.stdout).toMatch(/result\s+SKIPS 1 entry \(every replica alike\); INVALID STATE\n/);
    // The entry that made it so, not the last revision (a trial: only 4 was named).
    expect(text.stdout).toMatch(
      /state\s+the replayed state fails the model's schema, since revision 3: .* at \/count/,
    );
    const report = await runCli(["verify", ...where(stream), "--json"]);
    expect(JSON.parse(report.stdout)).toMatchObject({
      result: "skips",
      skipped: 1,
      invalidState: expect.stringMatching(
        /fails the model's schema, since revision 3: .* at \/count$/,
      ),
      invalidSince: 3,
    });

    // `state` prints it (every replica holds it), says it fails the schema, exits 0.
    const state = await runCli(["state", ...where(stream)]);
    expect(state.code).toBe(0);
    expect(JSON.parse(state.stdout)).toEqual({ count: 1.5, notes: [] });
    expect(state.stderr).toMatch(
      /^statesync: the state at revision 4 fails the model's schema \(.* at \/count\); every replica holds it/,
    );
    const json = await runJson(["state", ...where(stream)]);
    expect(json).toEqual({
      revision: 4,
      state: { count: 1.5, notes: [] },
      invalid: expect.stringMatching(/ at \/count$/),
    });
    const before = await runCli(["state", ...where(stream, "--at", "2")]);
    expect(before.stderr).toBe(""); // a valid state: no notice
  });

  it("exits 1 where the replay stops: a command the model does not know", async () => {
    const stream = await seeded([command("increment", { by: 1 }), command("unknown", {})]);
    const r = await runCli(["verify", ...where(stream)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^statesync: UNKNOWN_COMMAND: revision 4: /);
  });

  it("names the stop first and says where the replay ended, also with skipped entries before it and more after (fresh-eyes trial)", async () => {
    const stream = await seeded([
      new TextEncoder().encode("[1,2"), // 3: malformed, skipped by every replica
      command("unknown", {}), // 4: every replica stops here
      command("increment", { by: 1 }), // 5, 6: never reached
      command("increment", { by: 1 }),
    ]);
    const json = await runCli(["verify", ...where(stream), "--json"]);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    // Before: revision 6 ("replayed revisions 1 to 6") and the skipped entry as the divergence.
    expect(report).toMatchObject({ stoppedAt: 4, revision: 3, divergences: 2 });
    expect(report.divergence).toMatchObject({ revision: 4, code: "UNKNOWN_COMMAND" });
    const text = await runCli(["verify", ...where(stream)]);
    expect(text.stdout).toMatch(/result\s+STOPS at revision 4/);
    expect(text.stdout).toMatch(/replayed\s+revisions 1 to 3/);
    expect(text.stderr).toMatch(/^statesync: UNKNOWN_COMMAND: revision 4: .*\(1 more: --json\)/);
  });

  it("compacts: the log starts at the snapshot entry, replicas and verify agree", async () => {
    const stream = await seeded([command("note", { text: "n" })]); // revision 3
    const result = await runJson(["compact", ...where(stream)]);
    expect(result).toEqual({
      revision: 4,
      firstRevision: 4,
      removedFrom: 1,
      written: true,
      purged: true,
    });
    const info = await runJson(["info", "--server", ctx.server.url, "--stream", stream]);
    expect(info).toMatchObject({
      entries: 1,
      firstRevision: 4,
      lastSnapshot: { revision: 4, base: 3 },
      model: { from: "snapshot" },
    });
    const replica = await openCounter(ctx.server.url, stream);
    expect(replica.state).toEqual({ count: 2, notes: ["n"] });
    expect(replica.revision).toBe(4);
    await replica.close();
    expect((await runJson(["verify", ...where(stream)])).ok).toBe(true);

    const text = await runCli(["compact", ...where(stream)]);
    expect(text.code).toBe(0);
    // Found by a fresh-eyes trial (stop 27): a second compaction said "compacted" though the
    // log already started with that snapshot entry and nothing was written.
    expect(text.stdout.trim()).toBe(
      "already compacted: the log starts at revision 4, a snapshot entry of the current state (revision 4); nothing written",
    );
    expect(await runJson(["compact", ...where(stream)])).toEqual({
      revision: 4,
      firstRevision: 4,
      removedFrom: 4,
      written: false,
      purged: false,
    });
  });

  it("refuses to compact an empty log", async () => {
    const stream = uniqueStream("EMPTY");
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.add({ name: stream, subjects: [`${stream}.log`] });
    await nc.close();
    const r = await runCli(["compact", ...where(stream)]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("statesync: VALIDATION: the log is empty: nothing to compact");
  });
});
