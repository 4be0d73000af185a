import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "./helpers.js";

const PROGRAM = fileURLToPath(new URL("./support/open-update-close.mjs", import.meta.url));

/**
 * Found by a fresh-eyes trial: open a live replica, await one update, close it: the process never
 * exited (6 of 6 runs). The follower's consumer creation was still in flight in nats.js when the
 * replica closed its connection, and nats.js retried it on a timer for minutes. Outcome only: the
 * program exits by itself, with status 0, before a generous deadline.
 */
describe("a program that opens, updates and closes a replica exits by itself", () => {
  const ctx = useNatsServer();

  it("exits with status 0, three times in a row", async () => {
    for (let i = 0; i < 3; i++) {
      const child = spawn(process.execPath, [PROGRAM, ctx.server.url, uniqueStream("EXIT")], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
      const deadline = new Promise<"still running">((r) =>
        setTimeout(() => r("still running"), 20_000),
      );
      const outcome = await Promise.race([exited, deadline]);
      if (outcome === "still running") child.kill("SIGKILL");
      expect(outcome, stderr).toBe(0);
    }
  }, 90_000);
});
