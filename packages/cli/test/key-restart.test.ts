import { JetStreamLog } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counter,
  MODEL,
  openCounter,
  runCli,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * A shared stream's key that starts again: a genesis entry after its entries, which every replica
 * applies (core's replay: the key purged by an operator, then written again), the state becoming
 * the model's initial state. A trial (stop 36) published one by hand: the replicas agreed on
 * count 0, while `verify` said "SKIPS 1 entry" at revision 0 and `history` marked it a no-op.
 */
describe("a key started again from a genesis entry", () => {
  const ctx = useNatsServer();

  it("verify says RESTARTS at its revision, history marks it restarts", async () => {
    const stream = uniqueStream("RESTART");
    const a = await openCounter(ctx.server.url, stream, { key: "k" });
    await a.update("increment", { by: 41 }); // 2
    await a.close();
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream, key: "k" });
    const genesis = {
      v: 1,
      kind: "genesis",
      ts: 1,
      client: "by-hand",
      model: counter.name,
      version: counter.version,
      initialHash: counter.initialHash,
    };
    const { revision } = await log.appendUnconditional(
      new TextEncoder().encode(JSON.stringify(genesis)),
      "by-hand-1",
    );
    await log.close();
    await nc.close();
    const where = target(ctx.server.url, stream, "--key", "k", "--model", MODEL);
    const verify = await runCli(["verify", ...where, "--json"]);
    expect(JSON.parse(verify.stdout)).toMatchObject({
      result: "restarts",
      skipped: 0,
      divergence: { revision, code: "TRUNCATED" },
    });
    const text = await runCli(["verify", ...where]);
    expect(text.stdout).toMatch(/RESTARTS: a genesis entry after the state's entries/);
    const history = await runCli(["history", ...where]);
    expect(history.stdout).toMatch(
      /\[restarts \(the state starts again\): TRUNCATED: the state started again/,
    );
    const state = JSON.parse((await runCli(["state", ...where, "--json"])).stdout);
    expect(state).toMatchObject({ revision, state: { count: 0 } });
  });
});
