import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The `demo:web` launcher (node/demo.ts, run from dist/node/demo.js): it stops when its
 * nats-server dies, stops the server when it is stopped, and leaves no process behind when it
 * is stopped through npm's pid (SIGTERM or SIGINT). Linux only: descendants are read from /proc.
 */
const exampleDir = fileURLToPath(new URL("..", import.meta.url));
const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

interface Demo {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
  /** Resolves with the server's pid and the app's address once the banner is printed. */
  readonly ready: Promise<{ natsPid: number; url: string }>;
}

const started: ChildProcess[] = [];
/** Descendants seen while a demo ran: killed after the test if a failure left them behind. */
const seen: number[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const pid of seen.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
});

function startDemo(command: string, args: string[], cwd: string): Demo {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let text = "";
  let resolveReady: (v: { natsPid: number; url: string }) => void = () => undefined;
  const ready = new Promise<{ natsPid: number; url: string }>((r) => (resolveReady = r));
  const onData = (chunk: Buffer) => {
    text += chunk.toString("utf8");
    const pid = /pid (\d+)\)/.exec(text);
    const url = /Open\s+(http\S+)/.exec(text);
    if (pid && url) resolveReady({ natsPid: Number(pid[1]), url: url[1]! });
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => text,
    ready: Promise.race([
      ready,
      exited.then((code) => {
        throw new Error(`the demo exited (${code}) before it was ready:\n${text}`);
      }),
    ]),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `pid`, from /proc/<pid>/stat (field 4 is the parent). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    for (const [child, parent] of parents) {
      if (parent === p) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => (socket.destroy(), resolve(false)));
    socket.once("error", () => resolve(true));
  });
}

describe("npm run demo:web (examples/collab-board/node/demo.ts)", () => {
  it("says so and exits 1 when its nats-server dies", async () => {
    const demo = startDemo(process.execPath, ["dist/node/demo.js"], exampleDir);
    const { natsPid, url } = await demo.ready;
    process.kill(natsPid, "SIGKILL");
    expect(await demo.exited).toBe(1);
    expect(demo.output()).toContain(`nats-server (pid ${natsPid}) exited (signal SIGKILL)`);
    expect(await refusesConnections(url)).toBe(true);
  });

  it("stops the preview and the server and exits 0 on SIGTERM", async () => {
    const demo = startDemo(process.execPath, ["dist/node/demo.js"], exampleDir);
    const { natsPid, url } = await demo.ready;
    const below = descendants(demo.child.pid!);
    seen.push(...below);
    expect(below).toContain(natsPid);
    demo.child.kill("SIGTERM");
    expect(await demo.exited).toBe(0);
    await until(() => below.every((pid) => !alive(pid)));
    expect(await refusesConnections(url)).toBe(true);
  });

  // npm forwards SIGINT and SIGTERM to its child only. Under `sh -c` (dash) a SIGINT never
  // reached the demo: the shell waits for its child before it acts on one, so a SIGINT sent to
  // npm's pid alone (not to its process group, as Ctrl-C does) stopped nothing. The scripts
  // `exec` the demo, so it is npm's child.
  it.each(["SIGTERM", "SIGINT"] as const)(
    "leaves no process behind when npm's pid gets %s",
    async (signal) => {
      const demo = startDemo(
        "npm",
        ["run", "--silent", "demo", "-w", "@statesync/example-collab-board"],
        repoRoot,
      );
      const { natsPid } = await demo.ready;
      const below = descendants(demo.child.pid!);
      seen.push(...below);
      expect(below).toContain(natsPid);
      expect(below.length).toBeGreaterThanOrEqual(3); // the demo, the watchdog, the server
      demo.child.kill(signal);
      await demo.exited;
      await until(() => below.every((pid) => !alive(pid)));
    },
  );
});
