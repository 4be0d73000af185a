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
const seen = new Map<number, string>(); // pid → start time
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const [pid, start] of seen) if (alive(pid, start)) process.kill(pid, "SIGKILL");
  seen.clear();
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

/**
 * Whether `pid` still runs: a zombie (exited, not reaped yet) counts as gone, and so does a pid
 * taken by another process since (`start`, the process's start time from /proc, differs).
 */
function alive(pid: number, start?: string): boolean {
  const stat = procStat(pid);
  if (stat === undefined || stat.state === "Z") return false;
  return start === undefined || stat.start === start;
}

/** State and start time (clock ticks since boot) of `pid`, from /proc/<pid>/stat. */
function procStat(pid: number): { state: string; start: string; name: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    return { state: fields[0]!, start: fields[19]!, name };
  } catch {
    return undefined;
  }
}

/**
 * Waits for `promise` at most `ms`; past that, fails naming the step, with the demo's output and
 * the processes it had started, so a failure says where it stopped (a CI run once timed out here
 * with no more than "Test timed out in 60000ms").
 */
async function step<T>(what: string, promise: Promise<T>, demo: Demo, pids: number[] = []) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const procs = pids.map((pid) => {
        const stat = procStat(pid);
        return `  ${pid} ${stat ? `${stat.name} ${stat.state}` : "gone"}`;
      });
      const lines = [`${what}: not within ${STEP_MS} ms`, "processes:", ...procs];
      reject(new Error([...lines, "output:", demo.output()].join("\n")));
    }, STEP_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
const STEP_MS = 30_000;

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

/** Resolves once every process of `below` (pids with their start times) is gone. */
async function allGone(below: ReadonlyMap<number, string>): Promise<void> {
  while ([...below].some(([pid, start]) => alive(pid, start))) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The processes below `pid` now, with their start times; remembered for the cleanup. */
function below(pid: number): Map<number, string> {
  const found = new Map<number, string>();
  for (const p of descendants(pid)) {
    const stat = procStat(p);
    if (stat) found.set(p, stat.start);
  }
  for (const [pid, start] of found) seen.set(pid, start);
  return found;
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
    const { natsPid, url } = await step("the banner", demo.ready, demo);
    process.kill(natsPid, "SIGKILL");
    expect(await step("the demo's exit", demo.exited, demo)).toBe(1);
    expect(demo.output()).toContain(`nats-server (pid ${natsPid}) exited (signal SIGKILL)`);
    expect(await refusesConnections(url)).toBe(true);
  });

  it("stops the server before it exits 0 on SIGTERM, and the preview", async () => {
    const demo = startDemo(process.execPath, ["dist/node/demo.js"], exampleDir);
    const { natsPid, url } = await step("the banner", demo.ready, demo);
    const pids = below(demo.child.pid!);
    expect([...pids.keys()]).toContain(natsPid);
    demo.child.kill("SIGTERM");
    // The demo's own stop, not vite's SIGTERM listener (which exited at once) nor the watchdog.
    const serverGoneFirst = new Promise<boolean>((resolve) =>
      demo.child.once("exit", () => resolve(!alive(natsPid, pids.get(natsPid)))),
    );
    expect(await step("the demo's exit", demo.exited, demo, [...pids.keys()])).toBe(0);
    expect(await serverGoneFirst).toBe(true);
    await step("every process gone", allGone(pids), demo, [...pids.keys()]);
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
      const { natsPid } = await step("the banner", demo.ready, demo);
      const pids = below(demo.child.pid!);
      expect([...pids.keys()]).toContain(natsPid);
      expect(pids.size).toBeGreaterThanOrEqual(3); // the demo, the watchdog, the server
      demo.child.kill(signal);
      await step("npm's exit", demo.exited, demo, [...pids.keys()]);
      await step("every process gone", allGone(pids), demo, [...pids.keys()]);
    },
    120_000,
  );
});
