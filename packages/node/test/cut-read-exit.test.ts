import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defineModel, openSynchronizer } from "@statesync/node";
import { z } from "zod/v4";
import { uniqueStream, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const PROGRAM = fileURLToPath(new URL("./support/cut-read-close.mjs", import.meta.url));
const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});

/**
 * Found by a trial: a replica catching up (its range read's consumer `ssr_*` created, the
 * connection cut right after, reconnects refused) is closed; `close()` resolves at once, but the
 * range read waits for the connection with `ConnectionGate.online(requestTimeoutMs)`, whose timer
 * `close()` does not end: the process lives on for the whole `requestTimeoutMs` (30 s here).
 */
describe("a replica closed while its catch-up read waits for the lost connection", () => {
  const ctx = useNatsServer();

  it("lets the process exit at once", async () => {
    const stream = uniqueStream("CUTR");
    const seed = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model,
      snapshots: false,
    });
    for (let i = 0; i < 3; i++) await seed.update("inc", {});
    await seed.close();
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    try {
      const cut = proxy.cutAfterPublish(
        (s) => s.startsWith("$JS.API.CONSUMER.CREATE.") && s.includes(".ssr_"),
        { refuseForMs: 60_000 },
      );
      const child = spawn(process.execPath, [PROGRAM, proxy.url, stream, "30000"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
      await cut;
      const closed = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), 10_000);
        child.stdout.on("data", () => {
          if (out.includes("closed in")) {
            clearTimeout(t);
            resolve(true);
          }
        });
      });
      expect(closed, out).toBe(true);
      const late = new Promise<"still running">((r) => setTimeout(() => r("still running"), 5_000));
      const outcome = await Promise.race([exited, late]);
      if (outcome === "still running") child.kill("SIGKILL");
      expect(outcome, out).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 45_000);
});
