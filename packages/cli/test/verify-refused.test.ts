import type { Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counter,
  MODEL,
  openCounter,
  runCli,
  seededCounter,
  target,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * `verify` on a log whose commands every replica refused alike (`COMMAND_FAILED`: the recipe
 * threw). Before, such a log always failed verification (`SKIPS`, exit 1), so an app whose
 * unconditional commands refuse by throwing (the documented way) could never pass it; with
 * format 4, one refused command of a `commands` entry also read as its whole entry skipped.
 * `--allow-refused` lets them pass; they are counted either way (`refused`). Also what a review
 * added: an entry failing `VALIDATION` and `COMMAND_FAILED` together, one in part before a stop,
 * and the revision named once for a command of a `commands` entry.
 */
describe("verify and commands every replica refused", () => {
  const ctx = useNatsServer();
  const common = { ts: 1_700_000_000_000, client: "raw" } as const;
  const command = (name: string, args: unknown): Entry =>
    ({ ...common, v: 3, kind: "command", mv: 1, seed: 1, name, args }) as Entry;
  const commands = (...calls: Array<[string, unknown]>): Entry =>
    ({
      ...common,
      v: 4,
      kind: "commands",
      mv: 1,
      commands: calls.map(([name, args], i) => ({ seed: i + 1, name, args })),
    }) as unknown as Entry;

  const seeded = (extra: Array<Entry | string>) => seededCounter(ctx.server.url, "REFUSED", extra);

  const refusals = () => [
    command("boom", {}), // 3: refused
    commands(["note", { text: "kept" }], ["boom", {}], ["increment", { by: 1 }]), // 4: one refused
    command("note", { text: "after" }), // 5
  ];
  const verify = (stream: string, ...more: string[]) =>
    runCli(["verify", ...target(ctx.server.url, stream, "--model", MODEL), ...more]);

  it("without --allow-refused: each refused command is a problem, as documented (exit 1)", async () => {
    const stream = await seeded(refusals());
    const text = await verify(stream);
    expect(text.code).toBe(1);
    // Entry 3 is a no-op whole; entry 4 applied two of its three commands (a trial: it was
    // counted as skipped whole).
    expect(text.stdout).toMatch(/^result +SKIPS 1 entry and part of 1 \(every replica alike\)$/m);
    expect(text.stdout).toMatch(/^refused commands +2 \(every replica alike\), among the skips/m);
    expect(text.stderr).toMatch(/^statesync: COMMAND_FAILED: revision 3: .*boom refuses/);
    expect(text.stderr).not.toMatch(/entry at revision 3/); // the revision once
    const json = await verify(stream, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      result: "skips",
      refused: 2,
      skipped: 1,
      partly: 1,
      divergences: 2,
    });
  });

  it("with --allow-refused: they pass, counted, and the rest of the log is still checked", async () => {
    const stream = await seeded(refusals());
    const text = await verify(stream, "--allow-refused");
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^result +ok$/m);
    expect(text.stdout).toMatch(/^refused commands +2 \(every replica alike\), allowed/m);
    const json = await verify(stream, "--allow-refused", "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      result: "ok",
      revision: 5,
      refused: 2,
      skipped: 0,
      divergences: 0,
      problems: [],
    });
    // The state the replay reached: the refused commands changed nothing, the others applied.
    const state = await runCli([
      "state",
      ...target(ctx.server.url, stream, "--model", MODEL, "--json"),
    ]);
    expect(JSON.parse(state.stdout)).toMatchObject({
      state: { count: 3, notes: ["kept", "after"] },
    });
  });

  it("--allow-refused lets only refusals pass: a malformed entry and bad arguments still fail", async () => {
    const stream = await seeded([
      ...refusals(),
      "{not json", // 6
      command("increment", { by: "x" }), // 7: its arguments fail the schema
    ]);
    const r = await verify(stream, "--allow-refused", "--json");
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { problems: Array<{ revision: number; code: string }> };
    expect(report).toMatchObject({ ok: false, result: "skips", refused: 2, skipped: 2, partly: 0 });
    expect(report.problems.map((p) => [p.revision, p.code])).toEqual([
      [6, "CORRUPT_ENTRY"],
      [7, "VALIDATION"],
    ]);
    // The reason says which argument and why, on one line (a trial: only the command's name).
    const why =
      /arguments of command "increment" fail its schema: ✖ Invalid input: expected number, received string → at by/;
    expect(report.problems[1]).toMatchObject({ problem: expect.stringMatching(why) });
    const history = await runCli(["history", ...target(ctx.server.url, stream, "--model", MODEL)]);
    expect(history.stdout.split("\n").find((l) => l.startsWith("7 "))).toMatch(why);
  });

  it("a commands entry all of whose commands were refused is a no-op whole, in history and verify", async () => {
    const stream = await seeded([commands(["boom", {}], ["boom", {}])]); // 3
    const history = await runCli(["history", ...target(ctx.server.url, stream, "--model", MODEL)]);
    const row = history.stdout.split("\n").find((l) => l.startsWith("3 ")) ?? "";
    expect(row).toMatch(
      /\[no-op: COMMAND_FAILED: .*command 1 of 2.*; COMMAND_FAILED: .*command 2 of 2/,
    );
    const r = await verify(stream, "--json");
    expect(JSON.parse(r.stdout)).toMatchObject({
      result: "skips",
      skipped: 1,
      partly: 0,
      refused: 2,
    });
    // --json gives each failed command with its place, for scripts (a trial: one joined string).
    const json = await runCli([
      "history",
      ...target(ctx.server.url, stream, "--model", MODEL, "--json"),
    ]);
    const entry = (JSON.parse(json.stdout) as Array<{ revision: number; replay?: unknown }>).find(
      (e) => e.revision === 3,
    );
    expect(entry?.replay).toMatchObject({
      verdict: "no-op",
      failed: [
        {
          index: 0,
          error: expect.stringMatching(/^COMMAND_FAILED: .*boom refuses.*\(command 1 of 2\)$/),
        },
        { index: 1, error: expect.stringMatching(/^COMMAND_FAILED: .*\(command 2 of 2\)$/) },
      ],
    });
  });

  it("a log that diverges names the divergence on stderr, not an earlier refused command", async () => {
    const stream = await seeded([
      command("boom", {}), // 3: refused
      {
        ...common,
        v: 1,
        kind: "snapshot",
        base: 3,
        model: counter.name,
        version: counter.version,
        initialHash: counter.initialHash,
        state: { count: 99, notes: [] },
      } as unknown as Entry, // 4: not the state the replay reaches (count 2)
    ]);
    const r = await verify(stream);
    expect(r.code).toBe(1);
    // The refused command at 3 is said too (a trial: only --json told).
    expect(r.stdout).toMatch(/^result +DIVERGES; SKIPS 1 entry \(every replica alike\)$/m);
    expect(r.stderr).toMatch(/^statesync: CORRUPT_ENTRY: revision 4: the snapshot entry differs/);
  });

  // A trial: a mistyped --key on a shared stream verified "ok", replayed "nothing (the log
  // retains no entry)", as a purged log would: a health check went green on a typo.
  it("a shared stream's key never written says so, and asks whether --key is right", async () => {
    const stream = uniqueStream("KEYS");
    const a = await openCounter(ctx.server.url, stream, { key: "hall1" });
    await a.update("increment", { by: 1 });
    await a.close();
    const r = await runCli([
      "verify",
      ...target(ctx.server.url, stream, "--key", "hall3", "--model", MODEL),
    ]);
    expect(r.stdout).toMatch(
      /^replayed +nothing \(nothing was ever appended under key hall3: is --key right\?\)$/m,
    );
  });

  // From a review: a commands entry failing in several ways, and one in part before a stop.
  it("VALIDATION, COMMAND_FAILED and an applied command: part of 1 entry, either way", async () => {
    const stream = await seeded([
      commands(["increment", { by: "x" }], ["boom", {}], ["increment", { by: 1 }]), // 3
    ]);
    for (const more of [[], ["--allow-refused"]]) {
      const r = await verify(stream, ...more);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^result +SKIPS part of 1 entry \(every replica alike\)$/m);
      expect(r.stderr).toMatch(/^statesync: VALIDATION: revision 3: arguments of command/);
      expect(r.stderr).not.toMatch(/entry at revision 3/); // the revision once
      const json = JSON.parse((await verify(stream, "--json", ...more)).stdout) as unknown;
      expect(json).toMatchObject({ result: "skips", skipped: 0, partly: 1, refused: 1 });
    }
    const history = await runCli(["history", ...target(ctx.server.url, stream, "--model", MODEL)]);
    const row = history.stdout.split("\n").find((l) => l.startsWith("3 ")) ?? "";
    expect(row).toMatch(
      /\[some commands no-op: VALIDATION: .*\(command 1 of 3\); COMMAND_FAILED: .*\(command 2 of 3\)\]/,
    );
  });

  it("VALIDATION and COMMAND_FAILED only: the entry is a no-op whole, either way", async () => {
    const stream = await seeded([commands(["increment", { by: "x" }], ["boom", {}])]); // 3
    for (const more of [[], ["--allow-refused"]]) {
      const json = JSON.parse((await verify(stream, "--json", ...more)).stdout) as unknown;
      expect(json).toMatchObject({ result: "skips", skipped: 1, partly: 0, refused: 1 });
    }
  });

  it("an entry applied in part, then a stop: the stop is named", async () => {
    const stream = await seeded([
      commands(["boom", {}], ["increment", { by: 1 }]), // 3: in part
      command("nope", {}), // 4: unknown, every replica stops
    ]);
    const r = await verify(stream);
    expect(r.stdout).toMatch(
      /^result +STOPS at revision 4; SKIPS part of 1 entry \(every replica alike\)$/m,
    );
    expect(r.stderr).toMatch(/^statesync: UNKNOWN_COMMAND: revision 4: /);
    const json = JSON.parse((await verify(stream, "--json")).stdout) as unknown;
    expect(json).toMatchObject({ result: "stops", stoppedAt: 4, partly: 1, refused: 1 });
  });
});
