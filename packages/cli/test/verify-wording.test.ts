import { encodeEntry, JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  MODEL,
  runCli,
  seededCounter,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * Regression tests (fresh-eyes trial) of `verify`'s wording: "replayed revisions 1 to 1" when
 * the replay stops at 1 (it replayed nothing; `replayed` ends at the revision before the stop),
 * and "DIVERGES" for a log whose malformed entries every replica skips alike (no replicas differ).
 */
describe("statesync verify says what happened", () => {
  const ctx = useNatsServer();
  const common = { v: 1, ts: 1_700_000_000_000, client: "raw" } as const;
  const command = (name: string, args: unknown): Entry =>
    ({ ...common, kind: "command", seed: 1, name, args }) as Entry;

  const seeded = (extra: Array<Entry | string>) => seededCounter(ctx.server.url, "SKIPS", extra);

  it("verify says nothing was replayed when the replay stops at the first revision", async () => {
    const stream = uniqueStream("SKIPS");
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    const genesis = {
      ...common,
      kind: "genesis",
      model: "counter",
      version: 1,
      initialHash: "0".repeat(64),
    };
    await log.appendUnconditional(encodeEntry(genesis as Entry), "g");
    await log.close();
    await nc.close();
    const where = target(ctx.server.url, stream, "--model", MODEL);
    const text = await runCli(["verify", ...where]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^result\s+STOPS at revision 1$/m);
    expect(text.stdout).toMatch(
      /^replayed\s+nothing \(the replay stops at the first retained revision, 1\)$/m,
    );
    const report = await runCli(["verify", ...where, "--json"]);
    expect(JSON.parse(report.stdout)).toMatchObject({
      ok: false,
      stoppedAt: 1,
      revision: 0,
      result: "stops",
    });
  });

  it("verify calls entries every replica skips alike SKIPS, not DIVERGES", async () => {
    const stream = await seeded(["{not json", command("increment", { by: 1e308 })]);
    const where = target(ctx.server.url, stream, "--model", MODEL);
    const text = await runCli(["verify", ...where]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^result\s+SKIPS 2 entries \(every replica alike\)$/m);
    expect(text.stdout).toMatch(/^replayed\s+revisions 1 to 4$/m);
    const report = JSON.parse((await runCli(["verify", ...where, "--json"])).stdout);
    expect(report).toMatchObject({ ok: false, result: "skips", divergences: 2 });
  });
});
