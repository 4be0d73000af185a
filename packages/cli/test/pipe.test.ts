import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BIN, openCounter, target, uniqueStream, useNatsServer } from "./helpers.js";

/** How a CLI run whose stdout reader went away after its first chunk ended. */
interface EarlyClose {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Runs the built CLI with its stdout piped into a reader that closes the pipe after the first
 * chunk, as `statesync history … | head -5` does.
 */
function runClosingEarly(args: string[]): Promise<EarlyClose> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, STATESYNC_SERVER: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stdout.once("data", () => child.stdout.destroy());
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe("statesync with a closed output pipe", () => {
  const ctx = useNatsServer();

  it("stops quietly with exit 0 when the reader of its stdout closes early (| head)", async () => {
    const stream = uniqueStream("PIPE");
    const a = await openCounter(ctx.server.url, stream);
    // Far more output than a pipe holds (64 KiB on Linux): the writes after the reader left fail.
    for (let i = 0; i < 4; i++)
      await a.updateUnconditionally("note", { text: "x".repeat(100_000) });
    await a.close();
    const r = await runClosingEarly(["history", ...target(ctx.server.url, stream), "--json"]);
    expect(r.stderr).toBe("");
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
  });
});
