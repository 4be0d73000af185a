import { encodeEntry, JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  MODEL,
  runCli,
  seededCounter,
  runJson,
  startTail,
  target,
  tcp,
  useNatsServer,
} from "./helpers.js";

/**
 * Regression tests (fresh-eyes trial): `history` and `tail` printed entries every replica skips
 * (a conditional update on a stale base, a command whose arguments fail the model's schema) as
 * ordinary updates and commands; with `--model` every entry carries the verdict of the engine's
 * own replay.
 */
describe("entries every replica skips, in history and tail", () => {
  const ctx = useNatsServer();
  const common = { v: 1, ts: 1_700_000_000_000, client: "raw" } as const;
  const command = (name: string, args: unknown): Entry =>
    ({ ...common, kind: "command", seed: 1, name, args }) as Entry;

  const seeded = (extra: Array<Entry | string>) => seededCounter(ctx.server.url, "SKIPS", extra);

  const hostile = () =>
    seeded([
      {
        ...common,
        kind: "update",
        base: 0,
        seed: 1,
        patches: [{ op: "replace", path: ["count"], value: 1 }],
      } as Entry, // 3
      command("increment", { by: 1e308 }), // 4: fails the args' schema
      command("boom", {}), // 5: its recipe throws
      "{not json", // 6
      command("note", { text: "fine" }), // 7
      command("nope", {}), // 8: unknown, every replica stops
      command("note", { text: "never" }), // 9
    ]);

  const expected = [
    { revision: 1 },
    { revision: 2 },
    {
      revision: 3,
      replay: { verdict: "skipped", error: "CORRUPT_ENTRY: conditional entry based on 0, not 2" },
    },
    { revision: 4, replay: { verdict: "no-op", error: expect.stringMatching(/^VALIDATION: /) } },
    {
      revision: 5,
      replay: { verdict: "no-op", error: expect.stringMatching(/^COMMAND_FAILED: .*boom refuses/) },
    },
    {
      revision: 6,
      kind: "malformed",
      replay: { verdict: "skipped", error: expect.stringMatching(/^CORRUPT_ENTRY: /) },
    },
    { revision: 7 },
    {
      revision: 8,
      replay: { verdict: "stops", error: expect.stringMatching(/^UNKNOWN_COMMAND: /) },
    },
    { revision: 9, replay: { verdict: "not-replayed", error: "the replay stops at revision 8" } },
  ];

  /** The table lines of entries 3, 4, 5, 8, 9 say what the replay did with them. */
  function checkLines(lines: string[]) {
    const line = (r: number) => lines.find((l) => l.startsWith(`${r} `)) ?? "";
    expect(line(3)).toMatch(
      /\[skipped: CORRUPT_ENTRY: conditional entry based on 0, not 2\] 1 patch: \/count$/,
    );
    expect(line(4)).toMatch(/\[no-op: VALIDATION: .*\] increment \{"by":1e\+308\}$/);
    expect(line(5)).toMatch(/\[no-op: COMMAND_FAILED: .*\] boom \{\}$/);
    expect(line(7)).toMatch(/ note \{"text":"fine"\}$/);
    expect(line(8)).toMatch(/\[stops: UNKNOWN_COMMAND: .*\] nope \{\}$/);
    expect(line(9)).toMatch(/\[not replayed: the replay stops at revision 8\] note/);
  }

  it("history --model marks every entry the replay skips, makes a no-op of or stops at", async () => {
    const stream = await hostile();
    const where = target(ctx.server.url, stream, "--model", MODEL);
    const rows = await runJson<Array<Record<string, unknown>>>(["history", ...where]);
    expect(rows).toMatchObject(expected);
    for (const r of [1, 2, 7]) expect(rows[r - 1]).not.toHaveProperty("replay");
    const text = await runCli(["history", ...where]);
    expect(text.code).toBe(0);
    checkLines(text.stdout.split("\n"));
    // A range is replayed from the first retained entry: the verdicts are the same.
    const part = await runJson(["history", ...where, "--from", "3", "--to", "4"]);
    expect(part).toMatchObject(expected.slice(2, 4));
  });

  it("tail --model marks them too", async () => {
    const stream = await hostile();
    const tail = startTail([...target(ctx.server.url, stream, "--model", MODEL), "--from", "3"]);
    await tail.until(({ stdout }) => /^9 /m.test(stdout));
    tail.child.kill("SIGTERM");
    expect((await tail.exited).code).toBe(0);
    checkLines(tail.out().stdout.split("\n"));
    const json = startTail([
      ...target(ctx.server.url, stream, "--model", MODEL),
      "--from",
      "1",
      "--json",
    ]);
    await json.until(({ stdout }) => stdout.trim().split("\n").length >= 9);
    json.child.kill("SIGTERM");
    await json.exited;
    const rows = json
      .out()
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as unknown);
    expect(rows).toMatchObject(expected);
  });

  it("tail --from past the latest --model replays the entries before it as they come", async () => {
    const stream = await seeded([]);
    const tail = startTail([...target(ctx.server.url, stream, "--model", MODEL, "--from", "4")]);
    await tail.until(({ stderr }) => stderr.includes("following"));
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    const stale = { ...common, kind: "update", base: 0, seed: 1, patches: [] } as Entry;
    await log.appendUnconditional(encodeEntry(command("note", { text: "unseen" })), "n3"); // 3
    await log.appendUnconditional(encodeEntry(stale), "u4"); // 4
    await log.close();
    await nc.close();
    await tail.until(({ stdout }) => /^4 /m.test(stdout));
    tail.child.kill("SIGTERM");
    await tail.exited;
    const lines = tail.out().stdout.split("\n");
    expect(lines.some((l) => l.startsWith("3 "))).toBe(false);
    expect(lines.find((l) => l.startsWith("4 "))).toMatch(
      /\[skipped: CORRUPT_ENTRY: conditional entry based on 0, not 3\] 0 patches$/,
    );
  });
});
