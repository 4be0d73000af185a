import {
  spawn,
  type ChildProcessByStdio,
  type ChildProcessWithoutNullStreams,
} from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import {
  encodeEntry,
  JetStreamLog,
  openSynchronizer,
  type Entry,
  type StateSynchronizer,
} from "@statesync/node";
import type { ConnectionOptions } from "nats";
import { onTestFinished } from "vitest";
// @ts-expect-error: a plain ES module (as operators hand models over), without declarations
import { counter as counterModel } from "./fixtures/counter-model.mjs";

import { tcp, uniqueStream } from "../../node/test/helpers.js";
export { useNatsServer, uniqueStream, tcp } from "../../node/test/helpers.js";

/** The built CLI (`npm run build` / `tsc -b packages/cli`). */
export const BIN = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
/** The test model module. */
export const MODEL = fileURLToPath(new URL("./fixtures/counter-model.mjs", import.meta.url));
/** A module exporting a model, but no default. */
export const NO_DEFAULT = fileURLToPath(new URL("./fixtures/no-default.mjs", import.meta.url));

/** The counter model's state. */
export interface CounterState {
  count: number;
  notes: string[];
}

/** The counter model of the fixture, typed. */
export const counter = counterModel as Parameters<
  typeof openSynchronizer<CounterState, any>
>[0]["model"];

/** What a CLI run printed and how it ended. */
/** The arguments that point a command at `stream` on the server at `url`, then `more`. */
export function target(url: string, stream: string, ...more: string[]): string[] {
  return ["--server", url, "--stream", stream, ...more];
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/bin.js ...args` to its end. `STATESYNC_SERVER` is unset unless given. With
 * `killAfterMs`, a run still going then is killed (`signal` says so) rather than left behind.
 */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  { killAfterMs }: { killAfterMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, STATESYNC_SERVER: "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (killAfterMs !== undefined) {
      const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      child.on("exit", () => clearTimeout(timer));
    }
    collectOutput(child, resolve, reject);
  });
}

/** Collects a child's stdout and stderr as text and settles with them once it closed. */
export function collectOutput(
  child: ChildProcessByStdio<null, Readable, Readable>,
  resolve: (result: CliResult) => void,
  reject: (error: Error) => void,
): void {
  let stdout = "";
  let stderr = "";
  // Decoded as a stream, so a character split across chunks stays whole.
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  child.on("error", reject);
  child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
}

/** Runs the CLI and parses its stdout as JSON; fails with its stderr when it exits non-zero. */
export async function runJson<T = any>(args: string[]): Promise<T> {
  const r = await runCli([...args, "--json"]);
  if (r.code !== 0) throw new Error(`statesync ${args.join(" ")} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** `nats` connect options a test replica may need (credentials, TLS). */
export type CounterConnectOptions = Omit<ConnectionOptions, "servers">;

/** A counter replica on `url` (no snapshots, not following). */
export function openCounter(
  url: string,
  stream: string,
  extra: { key?: string; subjectPrefix?: string; connectOptions?: CounterConnectOptions } = {},
): Promise<StateSynchronizer<CounterState, any>> {
  return openSynchronizer<CounterState, any>({
    servers: url,
    stream,
    model: counter,
    snapshots: false,
    live: false,
    compaction: false,
    ...extra,
  });
}

/** A running `statesync tail`: its output so far and a way to wait for more. */
export function startTail(args: string[]) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [BIN, "tail", ...args], {
    env: { ...process.env, STATESYNC_SERVER: "" },
  });
  let stdout = "";
  let stderr = "";
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  child.stdout.setEncoding("utf8").on("data", (d: string) => ((stdout += d), wake()));
  child.stderr.setEncoding("utf8").on("data", (d: string) => ((stderr += d), wake()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => (wake(), resolve({ code, signal }))),
  );
  // A test that fails before it stops the tail must not leave it running (it follows forever).
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  /** Resolves once `predicate` holds of the output (fails the test after 20 s). */
  async function until(predicate: (out: { stdout: string; stderr: string }) => boolean) {
    const deadline = Date.now() + 20_000;
    while (!predicate({ stdout, stderr })) {
      if (Date.now() > deadline) throw new Error(`tail output: ${stdout}\n${stderr}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  return { child, until, exited, out: () => ({ stdout, stderr }) };
}

/** The names of the streams on the server at `url` (to check that a command created none). */
export async function streamNames(url: string): Promise<string[]> {
  const nc = await tcp(url);
  const names: string[] = [];
  for await (const n of (await nc.jetstreamManager()).streams.names()) names.push(n);
  await nc.close();
  return names;
}

/**
 * A new counter stream (`prefix` names it) at revision 2 (genesis, then increment by 2), then
 * `extra` appended raw, as another writer would: an entry encoded, text or bytes as they are,
 * under message ids `<idPrefix>-0`, `<idPrefix>-1`, ... Returns the stream's name.
 */
export async function seededCounter(
  url: string,
  prefix: string,
  extra: ReadonlyArray<Entry | string | Uint8Array> = [],
  idPrefix = "raw",
): Promise<string> {
  const stream = uniqueStream(prefix);
  const a = await openCounter(url, stream);
  await a.update("increment", { by: 2 });
  await a.close();
  const nc = await tcp(url);
  const log = new JetStreamLog({ connection: nc, stream });
  for (const [i, e] of extra.entries()) {
    const data =
      typeof e === "string"
        ? new TextEncoder().encode(e)
        : e instanceof Uint8Array
          ? e
          : encodeEntry(e);
    await log.appendUnconditional(data, `${idPrefix}-${i}`);
  }
  await log.close();
  await nc.close();
  return stream;
}

/** What a raw entry of the tests' own writer carries (format 1, client `test`). */
const rawCommon = { v: 1, ts: 1_700_000_000_000, client: "test" } as const;

/** A one-message snapshot entry of the counter model holding `state`, based on `base`. */
export function counterSnapshot(base: number, state: unknown): Entry {
  const { name, version, initialHash } = counter;
  return { ...rawCommon, kind: "snapshot", base, model: name, version, initialHash, state };
}

/** An unconditional command entry of the counter model (format 1: unchecked). */
export function counterCommand(name: string, args: unknown): Entry {
  return { ...rawCommon, kind: "command", seed: 1, name, args };
}

/**
 * A `JetStreamLog` of `stream` on its own connection to `url`, both closed when the test ends
 * (a client of the log beside the CLI's: the replica that compacts while a command reads).
 */
export async function jetStreamLogAt(url: string, stream: string): Promise<JetStreamLog> {
  const nc = await tcp(url);
  const log = new JetStreamLog({ connection: nc, stream });
  onTestFinished(async () => {
    await log.close();
    await nc.close();
  });
  return log;
}
