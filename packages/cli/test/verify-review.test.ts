import { encodeEntry, JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { MODEL, openCounter, runCli, target, tcp, uniqueStream, useNatsServer } from "./helpers.js";

/**
 * A review of verify's refused / partly counts: a `commands` entry with commands failing
 * VALIDATION and COMMAND_FAILED, and one applied, with and without `--allow-refused`; an entry
 * applied in part followed by a stop. And the revision named once (e53e560) also for a command of
 * a `commands` entry, whose error text reads "(command 1 of 3 in the entry at revision 3)".
 */
describe("verify: a commands entry failing in several ways", () => {
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

  /** A counter log at revision 2 (genesis, increment by 2), then `extra` raw entries. */
  async function seeded(extra: Entry[]): Promise<string> {
    const stream = uniqueStream("MIXED");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 });
    await a.close();
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    for (const [i, e] of extra.entries()) await log.appendUnconditional(encodeEntry(e), `raw-${i}`);
    await log.close();
    await nc.close();
    return stream;
  }
  const verify = (stream: string, ...more: string[]) =>
    runCli(["verify", ...target(ctx.server.url, stream, "--model", MODEL), ...more]);

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
