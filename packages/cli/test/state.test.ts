import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  MODEL,
  NO_DEFAULT,
  openCounter,
  runCli,
  runJson,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/** `statesync state --model PATH [--at N]`: the engine's state, as JSON, from a model module. */
describe("statesync state", () => {
  const ctx = useNatsServer();
  const where = (stream: string, ...more: string[]) => target(ctx.server.url, stream, ...more);

  async function seeded(): Promise<string> {
    const stream = uniqueStream("STATE");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 }); // 2
    await a.updateUnconditionally("note", { text: "hi" }); // 3
    await a.update("increment", { by: 3 }); // 4
    await a.close();
    return stream;
  }

  it("prints the latest state, and the state at a retained revision", async () => {
    const stream = await seeded();
    const latest = await runCli(["state", ...where(stream, "--model", MODEL)]);
    expect(latest.code).toBe(0);
    expect(JSON.parse(latest.stdout)).toEqual({ count: 5, notes: ["hi"] });
    expect(latest.stdout).toContain('\n  "count": 5'); // pretty-printed for people

    expect(await runJson(["state", ...where(stream, "--model", MODEL, "--at", "3")])).toEqual({
      revision: 3,
      state: { count: 2, notes: ["hi"] },
    });
    expect(await runJson(["state", ...where(stream, "--model", MODEL, "--at", "0")])).toEqual({
      revision: 0,
      state: { count: 0, notes: [] },
    });
    // A named export, PATH#name
    const named = await runJson(["state", ...where(stream, "--model", `${MODEL}#counter`)]);
    expect(named).toEqual({ revision: 4, state: { count: 5, notes: ["hi"] } });
  });

  it("refuses --at past the latest, before the retained history, or not a number", async () => {
    const stream = await seeded();
    const past = await runCli(["state", ...where(stream, "--model", MODEL, "--at", "9")]);
    expect(past.code).toBe(1);
    expect(past.stderr.trim()).toBe(
      "statesync: VALIDATION: --at 9 is past the latest revision (4)",
    );
    const word = await runCli(["state", ...where(stream, "--model", MODEL, "--at", "latest")]);
    expect(word.stderr.trim()).toBe("statesync: VALIDATION: --at must be a non-negative integer");

    const compacted = await runCli(["compact", ...where(stream, "--model", MODEL)]);
    expect(compacted.code).toBe(0);
    const before = await runCli(["state", ...where(stream, "--model", MODEL, "--at", "2")]);
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/^statesync: TRUNCATED: revision 2 is before the retained/);
  });

  it("refuses model files without a model, of another kind, or of another model", async () => {
    const stream = await seeded();
    const noDefault = await runCli(["state", ...where(stream, "--model", NO_DEFAULT)]);
    expect(noDefault.code).toBe(1);
    expect(noDefault.stderr).toMatch(
      /^statesync: VALIDATION: --model \S+no-default\.mjs has no default export \(its exports: counter\)/,
    );
    const notModel = await runCli(["state", ...where(stream, "--model", `${MODEL}#notAModel`)]);
    expect(notModel.stderr).toMatch(/export notAModel is not a model \(a defineModel result\)/);
    const missing = await runCli(["state", ...where(stream, "--model", `${MODEL}#nope`)]);
    expect(missing.stderr).toMatch(/has no export named nope/);
    const ts = await runCli(["state", ...where(stream, "--model", "model.ts")]);
    expect(ts.stderr.trim()).toBe(
      "statesync: VALIDATION: --model model.ts: give a JavaScript ES module (.js or .mjs), optionally with #export",
    );
    const broken = path.join(ctx.dir, "broken.mjs");
    await writeFile(broken, "export default {;\n");
    const syntax = await runCli(["state", ...where(stream, "--model", broken)]);
    expect(syntax.stderr).toMatch(
      /^statesync: VALIDATION: --model \S+broken\.mjs could not be loaded/,
    );
    const noModel = await runCli(["state", ...where(stream)]);
    expect(noModel.stderr).toMatch(/^statesync: VALIDATION: --model PATH is required/);

    // The same model name and version with another initial state: the engine refuses the log.
    const other = await runCli(["state", ...where(stream, "--model", `${MODEL}#otherInitial`)]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^statesync: MODEL_MISMATCH: /);
  });

  it("does not write to an empty stream: it prints the initial state at revision 0", async () => {
    const stream = uniqueStream("EMPTY");
    const nc = await tcp(ctx.server.url);
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${stream}.log`] });
    expect(await runJson(["state", ...where(stream, "--model", MODEL)])).toEqual({
      revision: 0,
      state: { count: 0, notes: [] },
    });
    expect((await jsm.streams.info(stream)).state.last_seq).toBe(0);
    await nc.close();
  });

  it("takes a model PATH relative to the working directory", async () => {
    const stream = await seeded();
    const rel = path.relative(process.cwd(), MODEL);
    expect(rel.startsWith("/")).toBe(false);
    expect(await runJson(["state", ...where(stream, "--model", rel)])).toMatchObject({
      revision: 4,
    });
  });
});
