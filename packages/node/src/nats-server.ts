// Its declarations name Node types: an app whose tsconfig lists no `types` (TypeScript 6+)
// gets them through this reference instead of errors inside this package.
/// <reference types="node" preserve="true" />
import { fork, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { StateSyncError } from "@statesync/core";
import { findNatsServer, getFreePort } from "./find-nats-server.js";
import { checkStartOptions } from "./nats-server-options.js";

/** Ports and paths of a started server, for {@link StartNatsServerOptions.extraConfig}. */
export interface NatsServerPorts {
  /** Client port (TCP). */
  readonly port: number;
  /** WebSocket port. */
  readonly wsPort: number;
  /** Directory of the config file and the JetStream store. */
  readonly dir: string;
}

/** Options of {@link startNatsServer}. */
export interface StartNatsServerOptions {
  /** The binary; default `NATS_SERVER_BIN`, then `nats-server` on PATH, then /usr/sbin/nats-server. */
  bin?: string;
  /** Client port; default a free one. */
  port?: number;
  /** WebSocket port; default a free one. */
  wsPort?: number;
  /**
   * JetStream limits in bytes (`max_memory_store`, `max_file_store`) and `domain` (for a hub
   * with leaf nodes: their clients reach it as `$JS.<domain>.API`), or `false` for a server
   * without JetStream (a leaf node in front of a hub that holds the streams: its clients' JetStream
   * API requests go over the leaf connection to the hub; README "Beyond one server").
   */
  jetstream?: false | { maxMemoryStore?: number; maxFileStore?: number; domain?: string };
  /**
   * Config text appended to the generated file: `authorization { users = [...] }`, a `cluster`
   * block, ... A function receives the ports and directory first.
   */
  extraConfig?: string | ((ports: NatsServerPorts) => string);
  /** `server_name`; default a random `statesync-...`. */
  serverName?: string;
  /** Keep the directory (store and config) on `stop()`. Default false. */
  keepStore?: boolean;
  /** How long to wait for "Server is ready", ms. Default 15,000. */
  startTimeoutMs?: number;
}

/** How a server process ended (see {@link NatsServer.onExit}). */
export interface NatsServerExit {
  /** Exit code, or null when a signal ended it (or the watchdog could not say). */
  readonly code: number | null;
  /** The signal that ended it, or null. */
  readonly signal: NodeJS.Signals | null;
  /** True when `stop()`, `restart()` or `kill()` ended it; false when it died on its own. */
  readonly expected: boolean;
}

/** A running nats-server (see {@link startNatsServer}). */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>` for `nats`. */
  readonly url: string;
  /** `ws://127.0.0.1:<wsPort>` for `nats.ws`. */
  readonly wsUrl: string;
  readonly port: number;
  readonly wsPort: number;
  /** Directory holding `nats-server.conf` and the JetStream store. */
  readonly dir: string;
  /** JetStream `store_dir`. */
  readonly storeDir: string;
  /** Path of the generated config file. */
  readonly configFile: string;
  /** Process id of the current server process (changes on restart), undefined when stopped. */
  readonly pid: number | undefined;
  /** Server log lines seen so far (the last 500). */
  output(): string;
  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and removes the directory unless kept. */
  stop(options?: { keepStore?: boolean }): Promise<void>;
  /** Stops the server if running and starts it again on the same ports and store. */
  restart(): Promise<void>;
  /**
   * Sends `signal` (default SIGKILL) to the server; waits for it to exit when it is fatal, and
   * for a SIGSTOP or SIGCONT to take effect (Linux: the process state in `/proc`, up to 2 s).
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Calls `listener` each time the server process exits (once per start), with `expected: false`
   * when it died without `stop()`, `restart()` or `kill()` asking (a crash, an outside signal),
   * so a long-running host such as a demo can report it and stop. Returns an unsubscribe
   * function. The listener does not keep this process alive.
   */
  onExit(listener: (exit: NatsServerExit) => void): () => void;
}

const live = new Set<ChildProcess>();
const livePids = new Set<number>();
/** Temporary directories of servers not stopped yet and not to be kept. */
const liveDirs = new Set<string>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const pid of livePids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const child of live) child.kill("SIGKILL");
    // The watchdogs die with the servers here, before they could clean up: remove the dirs.
    for (const dir of liveDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
      } catch {
        // best effort
      }
    }
  });
}

const WATCHDOG = join(dirname(fileURLToPath(import.meta.url)), "nats-server-watchdog.js");

/**
 * Starts a throwaway nats-server with JetStream and a WebSocket listener on free ports in a
 * fresh temporary directory (for tests, demos and local development; jetstream-notes
 * "WebSocket": `websocket { listen, no_tls: true }`). Resolves once the server logs
 * "Server is ready". The server runs under a small watchdog process that kills it when this
 * process exits, however it exits. Throws `VALIDATION` for bad options (an unknown key, a port
 * that is no integer in 1-65535), {@link NatsServerNotFoundError} without a binary, or an Error
 * with the server's output when it does not start.
 */
export async function startNatsServer(options: StartNatsServerOptions = {}): Promise<NatsServer> {
  checkStartOptions(options);
  // A free port can be taken by another process between getFreePort() and the server's bind
  // (parallel test files do this): start again on new ports when they were ours to choose.
  const chosen = options.port === undefined || options.wsPort === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (!chosen || attempt >= 5 || !/address already in use/.test(String(err))) throw err;
    }
  }
}

async function startOnce(options: StartNatsServerOptions): Promise<NatsServer> {
  const bin = findNatsServer(options.bin);
  installExitHook();
  const dir = await mkdtemp(join(tmpdir(), "statesync-nats-"));
  if (!options.keepStore) liveDirs.add(dir);
  const port = options.port ?? (await getFreePort());
  const wsPort = options.wsPort ?? (await getFreePort());
  const storeDir = join(dir, "jetstream");
  const configFile = join(dir, "nats-server.conf");
  const ports: NatsServerPorts = { port, wsPort, dir };
  const extra =
    typeof options.extraConfig === "function"
      ? options.extraConfig(ports)
      : (options.extraConfig ?? "");
  const js = options.jetstream ?? {};
  const config = [
    `server_name: ${JSON.stringify(options.serverName ?? `statesync-${port}`)}`,
    `listen: "127.0.0.1:${port}"`,
    ...(js === false
      ? []
      : [
          `jetstream {`,
          `  store_dir: ${JSON.stringify(storeDir)}`,
          js.maxMemoryStore !== undefined ? `  max_memory_store: ${js.maxMemoryStore}` : "",
          js.maxFileStore !== undefined ? `  max_file_store: ${js.maxFileStore}` : "",
          js.domain !== undefined ? `  domain: ${JSON.stringify(js.domain)}` : "",
          `}`,
        ]),
    `websocket {`,
    `  listen: "127.0.0.1:${wsPort}"`,
    `  no_tls: true`,
    `}`,
    extra,
    "",
  ].join("\n");
  await writeFile(configFile, config);

  const lines: string[] = [];
  const timeoutMs = options.startTimeoutMs ?? 15_000;
  let child: ChildProcess | undefined;
  let pid: number | undefined;
  let exited: Promise<void> = Promise.resolve();
  let removed = false;
  /** terminate() is ending the current process: its exit is expected. */
  let expecting = false;
  const exitListeners = new Set<(exit: NatsServerExit) => void>();

  const launch = async (): Promise<void> => {
    // The watchdog removes `dir` if this process dies first, unless the store is to be kept.
    const orphanCleanup = options.keepStore ? [] : [dir];
    const proc = fork(WATCHDOG, [bin, configFile, ...orphanCleanup], {
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      execArgv: [],
      // Its own process group: a signal to this process's group (Ctrl-C, `timeout -s KILL`, a CI
      // job cancelled) reaches this process, not the watchdog, which then sees it gone and stops
      // the server. In the same group, a SIGKILL to the group killed the watchdog too, and the
      // server's directory stayed behind.
      detached: true,
    });
    child = proc;
    live.add(proc);
    expecting = false;
    let reported = false;
    const reportExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (reported) return;
      reported = true;
      const exit: NatsServerExit = { code, signal, expected: expecting };
      for (const listener of [...exitListeners]) listener(exit);
    };
    let markExited: () => void = () => undefined;
    exited = new Promise<void>((resolve) => (markExited = resolve));
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`nats-server did not start within ${timeoutMs} ms:\n${tail(lines)}`));
      }, timeoutMs);
      const onData = (chunk: Buffer) => {
        for (const line of chunk.toString("utf8").split("\n")) {
          if (!line) continue;
          lines.push(line);
          if (lines.length > 500) lines.shift();
          if (line.includes("Server is ready")) {
            clearTimeout(timer);
            resolve();
          }
        }
      };
      proc.stdout?.on("data", onData);
      proc.stderr?.on("data", onData);
      proc.on("message", (m: WatchdogMessage) => {
        if (m.type === "exit") {
          reportExit(m.code ?? null, m.signal ?? null);
          // The watchdog stays until this process stops it or dies (then it cleans up).
          clearTimeout(timer);
          // Its output as the watchdog read it to the end (this process's pipe may lag).
          const output = m.output ?? tail(lines);
          reject(new Error(`nats-server exited before it was ready:\n${output}`));
        } else if (m.type === "pid" && m.pid !== undefined) {
          pid = m.pid;
          livePids.add(m.pid);
        } else if (m.type === "error") {
          clearTimeout(timer);
          reject(new Error(`nats-server failed to start: ${m.message}`));
        }
      });
      proc.on("exit", () => {
        clearTimeout(timer);
        live.delete(proc);
        if (pid !== undefined) livePids.delete(pid);
        pid = undefined;
        if (child === proc) child = undefined;
        // The watchdog outlives the server; its "exit" message may be lost when it dies too.
        reportExit(null, null);
        markExited();
        reject(new Error(`nats-server exited before it was ready:\n${tail(lines)}`));
      });
    });
    try {
      await ready;
    } catch (err) {
      proc.kill("SIGKILL");
      await exited;
      throw err;
    }
    // Let this process exit while the server runs; the watchdog then stops it.
    proc.unref();
    proc.channel?.unref();
    (proc.stdout as { unref?: () => void } | null)?.unref?.();
    (proc.stderr as { unref?: () => void } | null)?.unref?.();
  };

  const terminate = async (signal: NodeJS.Signals): Promise<void> => {
    if (!child) return;
    child.ref();
    expecting = true;
    // Tell the watchdog this exit is ours (stop, restart, kill): it must not clean up.
    const announced = child;
    if (announced.connected) {
      await new Promise<void>((resolve) =>
        announced.send({ type: "expect-exit" }, () => resolve()),
      );
    }
    const serverPid = pid;
    if (serverPid !== undefined) {
      try {
        process.kill(serverPid, signal);
        // A server frozen by kill("SIGSTOP") only acts on the signal once resumed.
        if (signal !== "SIGKILL") process.kill(serverPid, "SIGCONT");
      } catch {
        // already gone
      }
    }
    const killer = setTimeout(() => {
      if (pid !== undefined) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      child?.kill("SIGKILL");
    }, 10_000);
    await exited;
    clearTimeout(killer);
  };

  try {
    await launch();
  } catch (err) {
    liveDirs.delete(dir);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${wsPort}`,
    port,
    wsPort,
    dir,
    storeDir,
    configFile,
    get pid() {
      return pid;
    },
    output: () => lines.join("\n"),
    async stop(stopOptions = {}) {
      await terminate("SIGTERM");
      const keep = stopOptions.keepStore ?? options.keepStore ?? false;
      liveDirs.delete(dir);
      if (!keep && !removed) {
        removed = true;
        await rm(dir, { recursive: true, force: true });
      }
    },
    async restart() {
      if (removed) {
        throw new StateSyncError(
          "CLOSED",
          "the server was stopped and its directory removed: restart() needs stop({ keepStore: true }) or kill()",
        );
      }
      await terminate("SIGTERM");
      await launch();
    },
    async kill(signal = "SIGKILL") {
      const fatal = ["SIGKILL", "SIGTERM", "SIGINT", "SIGQUIT"].includes(signal);
      if (fatal) return terminate(signal);
      if (pid === undefined) return;
      process.kill(pid, signal);
      // A signal is delivered asynchronously: on a loaded machine a server "stopped" this way
      // still answered publishes sent right after (a CI failure of append-limits.test.ts).
      if (signal === "SIGSTOP" || signal === "SIGCONT") await untilState(pid, signal === "SIGSTOP");
    },
    onExit(listener) {
      exitListeners.add(listener);
      return () => void exitListeners.delete(listener);
    },
  };
}

/** Waits (up to 2 s) until process `pid` is stopped (`stopped`) or running again (Linux only). */
async function untilState(pid: number, stopped: boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    let stat: string;
    try {
      stat = await readFile(`/proc/${pid}/stat`, "utf8");
    } catch {
      return; // not Linux, or the process is gone
    }
    // "pid (comm) S ...": the state follows the last ")"; T is stopped (by a signal).
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if ((state === "T") === stopped) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Messages of the watchdog (nats-server-watchdog.ts). */
interface WatchdogMessage {
  type: string;
  pid?: number;
  message?: string;
  code?: number | null;
  signal?: NodeJS.Signals | null;
  /** The server's last lines of output, with `exit`. */
  output?: string;
}

function tail(lines: string[]): string {
  return lines.slice(-30).join("\n");
}
