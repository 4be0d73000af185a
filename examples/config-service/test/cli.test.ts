import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { getFreePort, openSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlagEvaluator, type EvaluationContext } from "../src/evaluate.js";
import type { FlagdConfig, Json } from "../src/flagd-schema.js";
import { flagsModel } from "../src/flags-model.js";
import { flagsModelV2, withOwners } from "../src/flags-model-v2.js";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const root = fileURLToPath(new URL("../../..", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const flags = (...args: string[]) => run(process.execPath, [cli, ...args]);

/** A flagd file with what the example used to refuse: a null default, $evaluators, nesting. */
const FILE: FlagdConfig = {
  $evaluators: { isPro: { "==": [{ var: "user.plan" }, "pro"] } },
  flags: {
    "upload-mb": {
      state: "ENABLED",
      variants: { small: 10, big: 1000 },
      defaultVariant: null,
      targeting: { if: [{ $ref: "isPro" }, "big", null] },
    },
    banner: { state: "DISABLED", variants: { a: "A", b: "B" } },
  },
};

let server: NatsServer;
let dir: string;
let streams = 0;
beforeAll(async () => {
  server = await startNatsServer();
  dir = await mkdtemp(join(tmpdir(), "flags-cli-"));
});
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

/** The revision and state of `stream` as a fresh replica sees them. */
async function read(stream: string) {
  const sync = await openSynchronizer({
    servers: server.url,
    stream,
    model: flagsModel,
    snapshots: false,
  });
  try {
    return {
      revision: sync.revision,
      state: JSON.parse(JSON.stringify(sync.state)) as FlagdConfig,
    };
  } finally {
    await sync.close();
  }
}

describe("flags CLI", () => {
  it("has --help on every command", async () => {
    const commands = [
      ["--help"],
      ["load", "--help"],
      ["evaluate", "--help"],
      ["upgrade", "--help"],
    ];
    for (const args of commands) {
      const { code, stdout } = await flags(...args);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^Usage: flags/);
      if (args.length > 1) expect(stdout).toMatch(/--server <url>[\s\S]*--stream <name>/);
    }
  });

  it("loads a whole flagd file in one update and evaluates as flagd-core does", async () => {
    const stream = `cli_${++streams}`;
    const connection = ["--server", server.url, "--stream", stream];
    const path = await file("good.json", FILE);
    const before = await read(stream); // creates the stream, holding the initial flags
    const loaded = await flags("load", path, ...connection);
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toContain(`loaded 2 flags from ${path}`);
    const after = await read(stream);
    expect(after.revision).toBe(before.revision + 1);
    expect(after.state).toEqual(FILE);

    const evaluator = new FlagEvaluator();
    const cases: Array<{ flag: string; context: EvaluationContext; fallback: Json }> = [
      { flag: "upload-mb", context: { targetingKey: "x", user: { plan: "pro" } }, fallback: 0 },
      { flag: "upload-mb", context: { user: { plan: "free" } }, fallback: 0 },
      { flag: "banner", context: {}, fallback: "" },
    ];
    for (const { flag, context, fallback } of cases) {
      const args = ["evaluate", flag, "--context", JSON.stringify(context)];
      const out = await flags(...args, "--default", JSON.stringify(fallback), ...connection);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.trim().split("\n")).toHaveLength(1);
      const expected = evaluator.evaluate(FILE, flag, context, fallback);
      expect(JSON.parse(out.stdout)).toEqual({
        value: expected.value,
        variant: expected.variant ?? null,
        reason: expected.reason,
      });
    }
    const line = (await flags("evaluate", "upload-mb", ...connection)).stdout;
    expect(JSON.parse(line)).toEqual({ value: null, variant: null, reason: "DEFAULT" });
  });

  it("refuses a file flagd rejects, writing nothing, with status 1", async () => {
    const stream = `cli_${++streams}`;
    const connection = ["--server", server.url, "--stream", stream];
    const before = await read(stream);
    const mixed = { flags: { f: { state: "ENABLED", variants: { a: 1, b: "two" } } } };
    const cases: Array<[string, RegExp]> = [
      [await file("mixed.json", mixed), /flagd rejects the document: \/flags\/f\/variants/],
      [await file("broken.json", "{ not json"), /flagd rejects the document/],
      [join(dir, "missing.json"), /cannot read/],
    ];
    for (const [path, message] of cases) {
      const out = await flags("load", path, ...connection);
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(message);
    }
    expect(await read(stream)).toEqual(before);
  });

  it("reports an unknown flag, a bad context and an unreachable server with status 1", async () => {
    const stream = `cli_${++streams}`;
    const connection = ["--server", server.url, "--stream", stream];
    await read(stream); // creates the stream (evaluate never does)
    const unknown = await flags("evaluate", "nope", ...connection);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({
      reason: "ERROR",
      errorCode: "FLAG_NOT_FOUND",
    });
    const context = await flags("evaluate", "dark-mode", "--context", "[1]", ...connection);
    expect(context.code).toBe(1);
    expect(context.stderr).toMatch(/--context/);
    const down = `nats://127.0.0.1:${await getFreePort()}`; // nothing listens there
    const out = await flags("evaluate", "dark-mode", "--server", down, "--timeout", "1000");
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(
      /cannot read stream "feature-flags" on nats:\/\/127\.0\.0\.1:\d+ within 1000 ms/,
    );
  });

  it("evaluate on a stream that does not exist fails and creates nothing (a mistyped --stream)", async () => {
    const stream = `cli_missing_${++streams}`;
    const out = await flags("evaluate", "dark-mode", "--server", server.url, "--stream", stream);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/does not exist/);
    const nc = await connect({ servers: server.url });
    try {
      const jsm = await nc.jetstreamManager();
      const names: string[] = [];
      for await (const name of jsm.streams.names()) names.push(name);
      expect(names).not.toContain(stream);
    } finally {
      await nc.close();
    }
  });

  const EVALUATION = ["evaluate", "upload-mb", "--context", '{"user":{"plan":"pro"}}'];
  const PRO = { value: 1000, variant: "big", reason: "TARGETING_MATCH" };

  it("before the switch: loads at model version 1 only, evaluates", async () => {
    const stream = `cli_${++streams}`;
    const connection = ["--server", server.url, "--stream", stream];
    const path = await file("rolling-1.json", FILE);
    expect((await flags("load", path, ...connection)).code).toBe(0);
    const before = await read(stream);
    const early = await flags("load", path, "--model-version", "2", ...connection);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/still at model version 1: load with --model-version 1/);
    const bad = await flags("load", path, "--model-version", "3", ...connection);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--model-version.*1 or 2/);
    expect(await read(stream)).toEqual(before); // nothing written
    expect(JSON.parse((await flags(...EVALUATION, ...connection)).stdout)).toEqual(PRO);
  });

  it("`upgrade` switches once; then loads at model version 2 only, evaluates the same", async () => {
    const stream = `cli_${++streams}`;
    const connection = ["--server", server.url, "--stream", stream];
    const path = await file("rolling-2.json", FILE);
    expect((await flags("load", path, ...connection)).code).toBe(0);
    const before = await read(stream);
    const switched = await flags("upgrade", ...connection);
    expect(switched.code, switched.stderr).toBe(0);
    const at = before.revision + 1;
    expect(switched.stdout).toContain(`switched the flags to model version 2 → rev ${at}`);
    const again = await flags("upgrade", ...connection);
    expect(again.stdout).toContain(`at model version 2 already (rev ${at})`);
    const old = await flags("load", path, ...connection);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/switched to feature-flags v2; .*\(load with --model-version 2\)$/m);
    const loaded = await flags("load", path, "--model-version", "2", ...connection);
    expect(loaded.stdout).toContain(`→ rev ${at + 1}`);
    expect(JSON.parse((await flags(...EVALUATION, ...connection)).stdout)).toEqual(PRO);
    const v2 = await openSynchronizer({
      servers: server.url,
      stream,
      model: flagsModelV2,
      snapshots: false,
    });
    expect(v2.state).toEqual(withOwners(FILE));
    await v2.close();
  });

  it("runs as `npm run flags -w …`, reading FILE from where npm was started", async () => {
    const stream = `cli_${++streams}`;
    const path = await file("npm.json", FILE);
    const out = await run("npm", [
      "run",
      "--silent",
      "flags",
      "-w",
      "@statesync/example-config-service",
      "--",
      "load",
      relative(root, path),
      "--server",
      server.url,
      "--stream",
      stream,
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect((await read(stream)).state).toEqual(FILE);
  });
});
