import { readFile, writeFile } from "node:fs/promises";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL, openCounter, runCli, runJson, target, uniqueStream } from "./helpers.js";

/**
 * nats-server 2.9.10 uses up a stream sequence for a publish the account's resource limits refuse
 * (docs/servers.md): the log then has revisions that hold no entry, which every replica steps
 * over (`SKIPPED_SEQUENCE`). The CLI reads them as the replicas do: `info` counts no malformed
 * entry and no stop, and `history` marks each such revision `SKIPPED_SEQUENCE`. Runs on 2.9.10
 * (the CLI's own project): 2.10 uses no sequence up. Before, `info` counted them as malformed
 * and `verify` as skipped entries (exit 1).
 */
const LIMIT = "max_file: 300000";
const accounts = `accounts { A { jetstream { ${LIMIT}, max_mem: 1000000 }, users: [{ user: a, password: a }] } }`;
const auth = ["--user", "a", "--password", "a"];

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ extraConfig: accounts });
});
afterAll(async () => {
  await server?.stop();
});

describe("a log with revisions that hold no entry (a publish refused for resource limits)", () => {
  it("info and history read it as every replica does", async () => {
    const stream = uniqueStream("USEDUP");
    const c = await openCounter(server.url, stream, { connectOptions: { user: "a", pass: "a" } });
    let refused = 0;
    for (let i = 0; i < 30 && refused < 2; i++) {
      await c.updateUnconditionally("note", { text: `${i}`.padEnd(60_000, "x") }).catch(() => {
        refused += 1;
      });
    }
    expect(refused).toBe(2);
    const config = await readFile(server.configFile, "utf8");
    await writeFile(server.configFile, config.replace(LIMIT, "max_file: 20000000"));
    await server.kill("SIGHUP");
    let after: number | undefined;
    for (let i = 0; i < 50 && after === undefined; i++) {
      after = await c.updateUnconditionally("increment", { by: 1 }).then(
        (r) => r.revision,
        () => new Promise<undefined>((r) => setTimeout(() => r(undefined), 100)),
      );
    }
    expect(after).toBeDefined();
    await c.close();

    const info = await runJson(["info", ...target(server.url, stream), ...auth]);
    expect(info).toMatchObject({ malformed: 0, stop: null, revision: after });
    const rows = await runJson<Array<{ revision: number; kind: string; error?: string }>>([
      "history",
      ...target(server.url, stream),
      ...auth,
    ]);
    const usedUp = rows.filter((r) => r.error?.startsWith("SKIPPED_SEQUENCE")).length;
    // Every revision up to the last is either an entry or a used-up sequence.
    expect(rows.length).toBe(after);
    expect(usedUp).toBe(2); // one per refused publish
    // Their own kind (before: "malformed", while info counts no malformed entry).
    expect(rows.filter((r) => r.kind === "used-up").length).toBe(2);
    expect(rows.filter((r) => r.kind === "malformed")).toEqual([]);
    expect(info.entries + usedUp).toBe(after);
    // verify: nothing skipped, nothing diverges (before: SKIPS 2 entries, exit 1).
    const verify = await runCli([
      "verify",
      ...target(server.url, stream),
      ...auth,
      "--model",
      MODEL,
    ]);
    expect(verify.code).toBe(0);
    const args = ["verify", ...target(server.url, stream), ...auth, "--model", MODEL, "--json"];
    expect(JSON.parse((await runCli(args)).stdout)).toMatchObject({
      result: "ok",
      skipped: 0,
    });
  });
});
