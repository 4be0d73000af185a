import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, target } from "./helpers.js";

/**
 * A command that cannot finish because nothing is left to wait for (a `--model` module whose
 * top-level await never settles: the event loop drains while the command is pending) fails,
 * exit 1, saying so. A fresh-eyes trial found verify, state and compact exiting 0 with no output,
 * so `statesync verify … && deploy` went ahead.
 */
describe("a command left unfinished", () => {
  let dir: string;
  let model: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "statesync-unsettled-"));
    model = path.join(dir, "model.mjs");
    await writeFile(model, "await new Promise(() => {});\nexport default 1;\n");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("exits 1 naming the model module that ended the process while loading (fresh-eyes trial)", async () => {
    const exits = path.join(dir, "exits.mjs");
    await writeFile(exits, "process.exit(0);\nexport default 1;\n");
    const r = await runCli(["state", ...target("nats://127.0.0.1:1", "ANY", "--model", exits)]);
    // Before: exit 0, no output.
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `statesync: VALIDATION: --model ${exits} ended the process while it was loading (process.exit): the command did not run\n`,
    );
  });

  it("exits 1 naming the model module whose loading never settled", async () => {
    // No server is reached: the model is loaded before connecting.
    for (const command of ["verify", "state", "compact", "export"]) {
      const more = command === "export" ? [path.join(dir, "out.json")] : [];
      const r = await runCli([
        command,
        ...target("nats://127.0.0.1:1", "ANY", "--model", model),
        ...more,
      ]);
      expect(r.code, `${command}: ${r.stdout}${r.stderr}`).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        `statesync: VALIDATION: --model ${model} never finished loading: its top-level await never settled (nothing was left to wait for)\n`,
      );
    }
  });
});
