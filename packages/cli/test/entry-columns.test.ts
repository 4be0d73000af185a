import { encodeEntry, JetStreamLog } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { cutTo } from "../src/output.js";
import {
  counterCommand,
  MODEL,
  runCli,
  runJson,
  seededCounter,
  startTail,
  target,
  tcp,
  useNatsServer,
} from "./helpers.js";

/**
 * `history` and `tail` print the same entries in the same columns. Before, `history` sized its
 * columns to their widest cells and `tail` used fixed widths, and the CLI's own message ids
 * (`statesync-cli-<8 hex>-<16 hex>-1`, 41 characters) overflowed `tail`'s MESSAGE-ID column
 * (36), pushing BYTES and WHAT out of line.
 */
describe("statesync history and tail: one column layout", () => {
  const ctx = useNatsServer();
  const LONG_ID = `an-importer-of-another-team-${"0123456789".repeat(4)}-7`;

  it("prints the CLI's own ids whole, cuts longer ones alike, and lines up every row", async () => {
    const stream = await seededCounter(ctx.server.url, "COLS"); // 1, 2
    const where = target(ctx.server.url, stream);
    const compact = await runCli(["compact", ...where, "--model", MODEL]); // 3, the CLI's id
    expect(compact.code).toBe(0);
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    await log.appendUnconditional(encodeEntry(counterCommand("note", { text: "x" })), LONG_ID); // 4
    await log.close();
    await nc.close();

    const rows = await runJson(["history", ...where]);
    const ids = rows.map((r: { messageId: string }) => r.messageId);
    expect(ids[0]).toMatch(/^statesync-cli-[0-9a-f]{8}-[0-9a-f]{16}-1$/);
    const history = (await runCli(["history", ...where])).stdout.trimEnd().split("\n");
    const [header, ...lines] = history;
    const at = (name: string) => header!.indexOf(name);
    const cell = (line: string, name: string, next: string) =>
      line.slice(at(name), at(next)).trimEnd();
    expect(at("MESSAGE-ID") - at("CLIENT")).toBe(26);
    expect(at("BYTES") - at("MESSAGE-ID")).toBe(46);
    expect(lines).toHaveLength(2);
    rows.forEach((row: { messageId: string; bytes: number }, i: number) => {
      const line = lines[i]!;
      // Every cell in its column: the id whole (the CLI's) or cut in the middle (the long one).
      expect(cell(line, "MESSAGE-ID", "BYTES")).toBe(cutTo(row.messageId, 44));
      expect(cell(line, "BYTES", "WHAT")).toBe(String(row.bytes));
    });
    expect(cell(lines[0]!, "MESSAGE-ID", "BYTES")).toBe(ids[0]);
    // 70 characters: its first 22 and its last 21, the writer's name and its counter.
    expect(cell(lines[1]!, "MESSAGE-ID", "BYTES")).toBe(
      "an-importer-of-another…1234567890123456789-7",
    );

    // `tail` prints the very same lines.
    const tail = startTail([...where, "--from", "1"]);
    await tail.until(({ stdout }) => stdout.trimEnd().split("\n").length >= history.length);
    tail.child.kill("SIGINT");
    expect(await tail.exited).toEqual({ code: 0, signal: null });
    expect(tail.out().stdout.trimEnd().split("\n")).toEqual(history);
  });
});
