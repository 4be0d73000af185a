import { fileURLToPath } from "node:url";
import { encodeEntry, JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counter,
  MODEL,
  openCounter,
  runCli,
  runJson,
  startTail,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

const MODEL_V2 = fileURLToPath(new URL("./fixtures/counter-v2.mjs", import.meta.url));
/** Version 2 whose `migrate` refuses a state noting "poison". */
const MODEL_V2_PICKY = fileURLToPath(new URL("./fixtures/counter-v2-picky.mjs", import.meta.url));

/**
 * `statesync verify` with a model newer than a snapshot entry (docs/cli.md, verify): the entry's
 * state is migrated up to `--model`'s version before it is compared with the replay, which is
 * at that version. Before, a version-1 snapshot entry was compared as it is with the replay
 * migrated to version 2, and a healthy log read DIVERGES (`at /tags the replay has [], the
 * snapshot nothing`).
 */
describe("statesync verify across model versions", () => {
  const ctx = useNatsServer();
  const where = (stream: string, ...more: string[]) => target(ctx.server.url, stream, ...more);
  const common = { ts: 1_700_000_000_000, client: "test" } as const;

  let appended = 0; // message ids must differ, or the server drops the entry as a duplicate
  /** Appends `entries` to `stream` as they are, unconditionally. */
  async function append(stream: string, entries: Entry[]): Promise<void> {
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    for (const e of entries) {
      await log.appendUnconditional(encodeEntry(e), `test-${stream}-${(appended += 1)}`);
    }
    await log.close();
    await nc.close();
  }

  /** `tail --model v2-picky --json --from` on `stream` until revision 6 is printed: its rows. */
  async function tailJson(stream: string, from: string) {
    const tail = startTail([...where(stream, "--model", MODEL_V2_PICKY, "--from", from, "--json")]);
    await tail.until(({ stdout }) => stdout.includes('"revision":6'));
    tail.child.kill("SIGTERM");
    expect(await tail.exited).toEqual({ code: 0, signal: null });
    return tail
      .out()
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { revision: number; replay?: unknown });
  }

  /** A version-1 snapshot entry, as a v1 replica's compaction writes it. */
  const snapshotV1 = (base: number, state: unknown): Entry => ({
    ...common,
    v: 1,
    kind: "snapshot",
    base,
    model: counter.name,
    version: 1,
    initialHash: counter.initialHash,
    state,
  });

  /**
   * A log at version 1 up to revision 4 (genesis; increment 3; note "a"; a v1 snapshot entry of
   * `snapshotState` based on 3), then switched to version 2 by `statesync migrate` (5), then a
   * v2 command (`tag` "red", 6).
   */
  async function switchedAfterSnapshot(snapshotState: unknown): Promise<string> {
    const stream = uniqueStream("VSNAP");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.update("note", { text: "a" }); // 3
    await a.close();
    await append(stream, [snapshotV1(3, snapshotState)]); // 4
    expect((await runCli(["migrate", ...where(stream, "--model", MODEL_V2)])).code).toBe(0); // 5
    const mv = 2;
    await append(stream, [
      { ...common, v: 3, kind: "command", seed: 1, name: "tag", args: { tag: "red" }, mv },
    ]); // 6
    return stream;
  }

  it("passes a healthy log whose snapshot entry was written before the switch", async () => {
    const stream = await switchedAfterSnapshot({ count: 3, notes: ["a"] });
    const report = await runJson(["verify", ...where(stream, "--model", MODEL_V2)]);
    expect(report).toEqual({
      ok: true,
      result: "ok",
      revision: 6,
      stoppedAt: null,
      firstRevision: 1,
      replayedFrom: 1,
      snapshotsChecked: 1,
      switchesChecked: 1,
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
    const text = await runCli(["verify", ...where(stream, "--model", MODEL_V2)]);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/result\s+ok/);
    // The log's own version before the switch verifies the same entry as it is.
    const v1 = await runJson(["state", ...where(stream, "--model", MODEL, "--at", "4")]);
    expect(v1).toEqual({ revision: 4, state: { count: 3, notes: ["a"] } });
  });

  it("passes a log not switched yet, read with the newer model", async () => {
    const stream = uniqueStream("VSNAP1");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 }); // 2
    await a.close();
    await append(stream, [snapshotV1(2, { count: 2, notes: [] })]); // 3
    const v2 = await runJson(["verify", ...where(stream, "--model", MODEL_V2)]);
    expect(v2).toMatchObject({ ok: true, result: "ok", snapshotsChecked: 1 });
    const v1 = await runJson(["verify", ...where(stream, "--model", MODEL)]);
    expect(v1).toMatchObject({ ok: true, result: "ok", snapshotsChecked: 1 });
  });

  it("still reports a version-1 snapshot entry that differs, at the compared version", async () => {
    const stream = await switchedAfterSnapshot({ count: 99, notes: ["a"] });
    const r = await runCli(["verify", ...where(stream, "--model", MODEL_V2)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/result\s+DIVERGES/);
    expect(r.stderr.trim()).toBe(
      "statesync: CORRUPT_ENTRY: revision 4: the snapshot entry differs from the state replayed at its base 3: at /count the replay has 3, the snapshot (migrated to v2) 99",
    );
  });

  it("reports a version-1 snapshot entry whose state does not migrate to version 2", async () => {
    // Its state fails version 1's schema: every replica skips the entry (CORRUPT_ENTRY), and one
    // starting from it (after a compaction removed the entries before) would stop there.
    const stream = await switchedAfterSnapshot({ count: "three", notes: ["a"] });
    const r = await runCli(["verify", ...where(stream, "--model", MODEL_V2, "--json")]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.result).toBe("diverges");
    expect(report.problems).toEqual([
      { revision: 4, code: "CORRUPT_ENTRY", problem: expect.stringMatching(/invalid/) },
      {
        revision: 4,
        code: "VALIDATION",
        problem: expect.stringMatching(
          /^the snapshot entry's state \(v1\) does not migrate to v2: migrating to counter v2 gave a state that fails its schema/,
        ),
      },
    ]);
    // The line on stderr names that divergence, on one line (zod breaks its text before the
    // path, which printed as a literal \u000a).
    const text = await runCli(["verify", ...where(stream, "--model", MODEL_V2)]);
    expect(text.stderr).toMatch(/^statesync: VALIDATION: revision 4: the snapshot entry's state/);
    expect(text.stderr.trim()).not.toContain("\\u000a");
  });

  it("passes a switch whose base migrates though an earlier state did not; state --at answers from the switch", async () => {
    // A fresh-eyes trial: version 1 wrote a state version 2's migrate refuses (3), then repaired
    // it (4); the switch (5) carries the state at 4 migrated. verify read DIVERGES with
    // switchesChecked 0 (`VALIDATION: revision 5: migrating ... (entry at revision 3)`), and
    // `state --at 5` exited 1: the replay to the switch migrated every state before it.
    const stream = uniqueStream("VPASS");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.update("note", { text: "poison" }); // 3
    await a.update((d) => {
      d.notes = ["fine"]; // 4
    });
    await a.close();
    const migrate = await runCli(["migrate", ...where(stream, "--model", MODEL_V2_PICKY)]);
    expect(migrate.stdout).toMatch(/switch entry at revision 5/); // based on 4
    await append(stream, [
      { ...common, v: 3, kind: "command", seed: 1, name: "tag", args: { tag: "red" }, mv: 2 },
    ]); // 6
    const report = await runJson(["verify", ...where(stream, "--model", MODEL_V2_PICKY)]);
    expect(report).toMatchObject({ ok: true, result: "ok", revision: 6, switchesChecked: 1 });
    const state = (at: string) =>
      runJson(["state", ...where(stream, "--model", MODEL_V2_PICKY, "--at", at)]);
    const migrated = { count: 3, notes: ["fine"], tags: [] };
    expect(await state("5")).toEqual({ revision: 5, state: migrated });
    expect(await state("6")).toEqual({ revision: 6, state: { ...migrated, tags: ["red"] } });
    expect(await state("4")).toEqual({ revision: 4, state: migrated });
    // The state that does not migrate is refused, naming its revision.
    const at3 = await runCli(["state", ...where(stream, "--model", MODEL_V2_PICKY, "--at", "3")]);
    expect(at3.code).toBe(1);
    expect(at3.stderr).toMatch(
      /^statesync: VALIDATION: migrating to counter v2 failed: Error: cannot migrate poison \(entry at revision 3\)/,
    );
  });

  it("history and tail --model go on past a state that failed to migrate only in passing", async () => {
    // A fresh-eyes trial: on the log of the test above, `history --model v2` marked 3
    // `[stops: VALIDATION … poison]` and 4-6 `not replayed` while verify said ok and
    // `state --at 4/5/6` answered: only replicas that check the state at 3 alone stop there.
    const stream = uniqueStream("VHIST");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.update("note", { text: "poison" }); // 3
    await a.update((d) => {
      d.notes = ["fine"]; // 4
    });
    await a.close();
    expect((await runCli(["migrate", ...where(stream, "--model", MODEL_V2_PICKY)])).code).toBe(0);
    await append(stream, [
      { ...common, v: 3, kind: "command", seed: 1, name: "tag", args: { tag: "red" }, mv: 2 },
    ]); // 6
    const poison = "VALIDATION: migrating to counter v2 failed: Error: cannot migrate poison";
    const rows = (await runJson([
      "history",
      ...where(stream, "--model", MODEL_V2_PICKY),
    ])) as Array<{ revision: number; replay?: unknown }>;
    expect(rows.map((r) => [r.revision, r.replay ?? null])).toEqual([
      [1, null],
      [2, null],
      [3, { verdict: "may-stop", error: poison }],
      [4, null],
      [5, null],
      [6, null],
    ]);
    // --to 3 ends the listing, not the log: 4 repairs the state all the same.
    const upTo3 = (await runJson([
      "history",
      ...where(stream, "--model", MODEL_V2_PICKY, "--to", "3"),
    ])) as Array<{ revision: number; replay?: unknown }>;
    expect(upTo3.at(-1)).toMatchObject({ revision: 3, replay: { verdict: "may-stop" } });
    const text = await runCli(["history", ...where(stream, "--model", MODEL_V2_PICKY)]);
    expect(text.code).toBe(0);
    const line3 = text.stdout.split("\n").find((l) => /^3\s/.test(l));
    expect(line3).toMatch(
      /\[may stop \(replicas that check this state alone\): VALIDATION: migrating to counter v2 failed: Error: cannot migrate poison\] note \{"text":"poison"\} \(1 patch: \/notes\/0\)$/,
    );
    expect(text.stdout).not.toMatch(/not replayed|stops/);
    const tail = await tailJson(stream, "2");
    expect(tail.map((r) => [r.revision, r.replay ?? null])).toEqual([
      [2, null],
      [3, { verdict: "may-stop", error: poison }],
      [4, null],
      [5, null],
      [6, null],
    ]);
  });

  it("history --model still says stops at a state that fails to migrate to the log's end, as verify", async () => {
    const stream = uniqueStream("VHEND");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.update("note", { text: "poison" }); // 3
    await a.update("increment", { by: 1 }); // 4: still poison
    await a.close();
    const verify = await runCli(["verify", ...where(stream, "--model", MODEL_V2_PICKY, "--json")]);
    expect(verify.code).toBe(1);
    expect(JSON.parse(verify.stdout)).toMatchObject({ result: "stops", stoppedAt: 3 });
    const rows = (await runJson([
      "history",
      ...where(stream, "--model", MODEL_V2_PICKY),
    ])) as Array<{ revision: number; replay?: { verdict: string } }>;
    expect(rows.map((r) => [r.revision, r.replay?.verdict ?? null])).toEqual([
      [1, null],
      [2, null],
      [3, "stops"],
      [4, "not-replayed"],
    ]);
  });

  it("still reports a divergence after the switch: a version-2 snapshot entry that differs", async () => {
    const stream = await switchedAfterSnapshot({ count: 3, notes: ["a"] });
    const v2Model = (await import(MODEL_V2)).default;
    await append(stream, [
      {
        ...common,
        v: 2,
        kind: "snapshot",
        base: 6,
        model: "counter",
        version: 2,
        from: 1,
        initialHash: v2Model.initialHash,
        state: { count: 3, notes: ["a"], tags: ["blue"] }, // the replay has ["red"]
      },
    ]); // 7
    const r = await runCli(["verify", ...where(stream, "--model", MODEL_V2, "--json")]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      ok: false,
      result: "diverges",
      snapshotsChecked: 2,
      switchesChecked: 1,
      divergences: 1,
      divergence: { revision: 7, code: "CORRUPT_ENTRY" },
    });
    expect(r.stderr.trim()).toBe(
      'statesync: CORRUPT_ENTRY: revision 7: the snapshot entry differs from the state replayed at its base 6: at /tags/0 the replay has "red", the snapshot "blue"',
    );
  });
});
