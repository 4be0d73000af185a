import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProfileContext, ProfileRun } from "./harness.js";
import { clientPrefix, countingPlacement, startServer, type Placement } from "./placement.js";

/** `bench/dist/child-main.js`: the entry of every client child process. */
const CHILD_MAIN = join(dirname(fileURLToPath(import.meta.url)), "..", "child-main.js");

/** A message between the bench process and a child (JSON over the IPC channel). */
export type Message = { type: string } & Record<string, unknown>;

/** Options of {@link Child.start}. */
export interface ChildOptions {
  /** `pinned` runs the child as `taskset -c 1 node …`. */
  placement: Placement;
}

/**
 * A client child process (`child-main.js`) with a message channel. The child runs one task (see
 * `tasks.ts`): it receives `{ type: "task", task, params }`, may exchange messages while it runs
 * (`ready`, `go`, …), and ends with `{ type: "result", value }` or `{ type: "error", message }`.
 */
export class Child {
  private readonly inbox: Message[] = [];
  private waiter: ((m: Message | Error) => void) | undefined;
  private exitError: Error | undefined;
  readonly exited: Promise<void>;

  private constructor(private readonly proc: ChildProcess) {
    proc.on("message", (m: Message) => this.deliver(m));
    this.exited = new Promise((resolve) => {
      proc.on("exit", (code, signal) => {
        this.exitError = new Error(`client child exited (code ${code}, signal ${signal})`);
        this.waiter?.(this.exitError);
        this.waiter = undefined;
        resolve();
      });
      proc.on("error", (err) => {
        this.exitError = err;
        this.waiter?.(err);
        this.waiter = undefined;
        resolve();
      });
    });
  }

  /** Spawns a child for `task` with `params` (JSON), on the placement's core. */
  static start(task: string, params: unknown, options: ChildOptions): Child {
    const node = [process.execPath, "--expose-gc", CHILD_MAIN];
    const [cmd, ...args] = [...clientPrefix(options.placement), ...node];
    const proc = spawn(cmd!, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const child = new Child(proc);
    child.send({ type: "task", task, params });
    return child;
  }

  private deliver(m: Message): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(m);
    } else {
      this.inbox.push(m);
    }
  }

  send(message: Message): void {
    if (this.proc.connected) this.proc.send(message);
  }

  /**
   * The next message; an `error` message, the child's exit, or `timeoutMs` without a message
   * (default 10 minutes) rejects.
   */
  async next(timeoutMs = 600_000): Promise<Message> {
    let timer: NodeJS.Timeout | undefined;
    const m =
      this.inbox.shift() ??
      (this.exitError
        ? this.exitError
        : await new Promise<Message | Error>((resolve) => {
            this.waiter = resolve;
            timer = setTimeout(() => {
              this.waiter = undefined;
              resolve(new Error(`client child sent nothing for ${timeoutMs / 1000} s`));
            }, timeoutMs);
          }));
    clearTimeout(timer);
    if (m instanceof Error) throw m;
    if (m.type === "error") throw new Error(`in client child: ${String(m.message)}`);
    return m;
  }

  /** Waits for a message of `type` (others before it are an error). */
  async expect(type: string, timeoutMs?: number): Promise<Message> {
    const m = await this.next(timeoutMs);
    if (m.type !== type) throw new Error(`expected "${type}" from client child, got "${m.type}"`);
    return m;
  }

  /** Waits for the result, then for the child to exit. */
  async result<T>(timeoutMs?: number): Promise<T> {
    const m = await this.expect("result", timeoutMs);
    await this.exited;
    return m.value as T;
  }

  /** Kills the child (if still running) and waits for it. */
  async kill(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
    await this.exited;
  }
}

/** Runs one task in a child process of `placement` and returns its result. */
export async function runInChild<T>(
  task: string,
  params: unknown,
  options: ChildOptions,
): Promise<T> {
  const child = Child.start(task, params, options);
  try {
    return await child.result<T>();
  } finally {
    await child.kill();
  }
}

/** What a throughput benchmark's child task takes (see {@link profileTaskInChild}). */
export interface ChildBenchParams {
  url: string;
  tmpDir: string;
  scale: number;
  /** `--cpu-prof`: only the statesync side, for `windowMs`, profiled into `file`. */
  profile?: { file: string; windowMs: number };
}

/**
 * `Benchmark.profile` for a benchmark whose child task takes `{ url, tmpDir, scale, profile:
 * { file, windowMs } }` and profiles its own measured window: starts a server in the counting
 * placement, runs the task for about 5 s (scaled) and returns what it profiled.
 */
export async function profileTaskInChild(task: string, ctx: ProfileContext): Promise<ProfileRun> {
  const placement = countingPlacement();
  const server = await startServer(placement);
  try {
    const file = join(ctx.dir, `${task}.cpuprofile`);
    const windowMs = Math.round(5_000 * ctx.scale);
    const r = await runInChild<{ what: string; ops: number; windowMs: number }>(
      task,
      {
        url: server.url,
        tmpDir: ctx.tmpDir,
        scale: ctx.scale,
        profile: { file, windowMs },
      } satisfies ChildBenchParams,
      { placement },
    );
    return { ...r, file };
  } finally {
    await server.stop();
  }
}
