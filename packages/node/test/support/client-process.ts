import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { classify, type History, type Outcome } from "./checker.js";

const CLIENT = fileURLToPath(new URL("./ledger-client.mjs", import.meta.url));

/** Options of one ledger client process (see ledger-client.mjs). */
export interface ClientProcessOptions {
  servers: string;
  stream: string;
  clientId: string;
  incarnation: number;
  snapshotDir?: string;
  snapshotEvery?: number;
  ops: number;
  durationMs?: number;
  pauseMs?: [number, number];
  unconditionalEvery?: number;
  compaction?: false | { everyEntries?: number; everyBytes?: number; jitter?: number };
  crashInSnapshotWrite?: boolean;
  hashEvery?: number;
  heapEveryMs?: number;
}

/** What the parent knows of a running client process. */
export interface ClientProcess {
  readonly child: ChildProcess;
  /** The name its observations are recorded under: `<clientId>#<incarnation>`. */
  readonly observer: string;
  readonly ready: Promise<{ revision: number; restored: number }>;
  readonly midWrite: Promise<void>;
  /** Resolves with the exit code (null when killed). */
  readonly exited: Promise<number | null>;
  /** The final report, when the process ended on its own. */
  done: { revision: number; hash: string; stats: Record<string, number> } | undefined;
  readonly errors: Array<{ code: string; message: string }>;
  readonly fatal: string[];
  /** `heapUsed` samples (bytes), after a forced GC. */
  readonly heap: number[];
  /** Milliseconds from invocation to outcome of each operation, by kind. */
  readonly latency: { conditional: number[]; unconditional: number[] };
  outcomes(): number;
  waitForOutcomes(n: number): Promise<void>;
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Kills every client process still running (for afterAll). */
export function killAllClients(): void {
  for (const c of running) c.kill("SIGKILL");
}

/**
 * Forks support/ledger-client.mjs and records what it reports into `history`: its operations
 * (classified with the checker's rules) and observations under `<clientId>#<incarnation>`.
 */
export function startClientProcess(
  history: History,
  options: ClientProcessOptions,
  execArgv: string[] = [],
): ClientProcess {
  const child = fork(CLIENT, [JSON.stringify(options)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv,
  });
  running.add(child);
  const observer = `${options.clientId}#${options.incarnation}`;
  let outcomes = 0;
  const kinds = new Map<string, "conditional" | "unconditional">();
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  let readyResolve: (v: { revision: number; restored: number }) => void = () => undefined;
  let midWriteResolve: () => void = () => undefined;
  const proc: ClientProcess = {
    child,
    observer,
    ready: new Promise((r) => (readyResolve = r)),
    midWrite: new Promise((r) => (midWriteResolve = r)),
    exited: new Promise<number | null>((resolve) =>
      child.on("exit", (code) => {
        running.delete(child);
        resolve(code);
      }),
    ),
    done: undefined,
    errors: [],
    fatal: [],
    heap: [],
    latency: { conditional: [], unconditional: [] },
    outcomes: () => outcomes,
    waitForOutcomes: (n) =>
      new Promise<void>((resolve) => {
        if (outcomes >= n) resolve();
        else waiters.push({ n, resolve });
      }),
    async kill() {
      child.kill("SIGKILL");
      await proc.exited;
    },
  };
  child.on("message", (m: any) => {
    switch (m.type) {
      case "ready":
        readyResolve(m);
        break;
      case "mid-write":
        midWriteResolve();
        break;
      case "invoke":
        history.invoke({ opId: m.opId, client: observer, kind: m.kind, by: m.by });
        kinds.set(m.opId, m.kind);
        break;
      case "outcome": {
        const outcome: Outcome =
          m.outcome.status === "ok" ? m.outcome : classify({ code: m.outcome.code });
        history.complete(m.opId, outcome);
        const kind = kinds.get(m.opId);
        kinds.delete(m.opId);
        if (kind && typeof m.ms === "number") proc.latency[kind].push(m.ms);
        outcomes += 1;
        for (const w of waiters.filter((w) => outcomes >= w.n)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
        break;
      }
      case "observe": {
        let list = history.observations.get(observer);
        if (!list) history.observations.set(observer, (list = []));
        list.push({
          revision: m.revision,
          hash: m.hash ?? undefined,
          count: m.count,
          opsLength: m.opsLength,
          lastOp: m.lastOp ?? undefined,
        });
        break;
      }
      case "error":
        proc.errors.push({ code: m.code, message: m.message });
        history.reported.push({ client: observer, code: m.code, message: m.message });
        break;
      case "heap":
        proc.heap.push(m.heapUsed);
        break;
      case "fatal":
        proc.fatal.push(m.message);
        break;
      case "done":
        proc.done = { revision: m.revision, hash: m.hash, stats: m.stats };
        break;
    }
  });
  return proc;
}
