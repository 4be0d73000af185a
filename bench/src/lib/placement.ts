import { execFileSync } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { findNatsServer, startNatsServer, type NatsServer } from "@statesync/node";
import { describeError } from "./harness.js";

/**
 * Where the server and the clients run:
 * - `pinned`: nats-server on core 0 (started as `taskset -c 0 nats-server …`, so Go sizes itself
 *   to one core) and every client process on core 1. This is the figure that counts: in a
 *   deployment the server runs elsewhere, and the client's own CPU cost shows.
 * - `shared`: server and clients on all cores, scheduled by the OS (as the benchmarks ran before).
 */
export type Placement = "pinned" | "shared";

/** The core of the server and the core of the clients in the pinned placement. */
export const SERVER_CPU = "0";
export const CLIENT_CPU = "1";

let tasksetChecked: boolean | undefined;
/** Whether the pinned placement can run here: 2 cores or more and `taskset` (util-linux). */
export function canPin(): boolean {
  if (tasksetChecked === undefined) {
    try {
      execFileSync("taskset", ["-c", CLIENT_CPU, "true"], { stdio: "ignore" });
      tasksetChecked = cpus().length >= 2;
    } catch {
      tasksetChecked = false;
    }
  }
  return tasksetChecked;
}

/**
 * The placements to measure, the pinned one first (the one that counts). Without 2 cores or
 * `taskset` only `shared` runs, and `why` says so.
 */
export function placements(): { list: Placement[]; why?: string } {
  if (canPin()) return { list: ["pinned", "shared"] };
  return {
    list: ["shared"],
    why: "pinned placement skipped: it needs 2 cores and taskset (util-linux)",
  };
}

/** The CPU list a process may run on (`Cpus_allowed_list` of /proc/<pid>/status), or "?". */
export async function allowedCpus(pid: number | undefined): Promise<string> {
  if (pid === undefined) return "?";
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    return /Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] ?? "?";
  } catch {
    return "?";
  }
}

/**
 * Starts a throwaway nats-server for `placement`. Pinned, it runs through a small wrapper script
 * that `exec`s `taskset -c 0 nats-server "$@"` (same pid, so `startNatsServer` stops it as
 * usual), and the server's CPU list is checked (throws when it is not core 0; the progress line
 * shows "?" when it could not be read).
 */
export async function startServer(placement: Placement): Promise<NatsServer> {
  if (placement === "shared") return startNatsServer();
  const dir = await mkdtemp(join(tmpdir(), "statesync-bench-pin-"));
  const wrapper = join(dir, "nats-server-pinned");
  const bin = findNatsServer();
  await writeFile(
    wrapper,
    `#!/bin/sh\nexec taskset -c ${SERVER_CPU} ${JSON.stringify(bin)} "$@"\n`,
  );
  await chmod(wrapper, 0o755);
  const server = await startNatsServer({ bin: wrapper }).catch(async (err: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw err;
  });
  const stop = server.stop.bind(server);
  server.stop = async (options) => {
    await stop(options);
    await rm(dir, { recursive: true, force: true });
  };
  // The server's pid arrives over the watchdog's IPC channel, maybe after "Server is ready".
  let cpusOfServer = await allowedCpus(server.pid);
  for (let i = 0; i < 50 && cpusOfServer === "?"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    cpusOfServer = await allowedCpus(server.pid);
  }
  if (cpusOfServer !== SERVER_CPU && cpusOfServer !== "?") {
    await server.stop();
    throw new Error(`pinned nats-server runs on cpus ${cpusOfServer}, not ${SERVER_CPU}`);
  }
  return server;
}

/** The `taskset` prefix of a client process of `placement` (none when shared). */
export function clientPrefix(placement: Placement): string[] {
  return placement === "pinned" ? ["taskset", "-c", CLIENT_CPU] : [];
}

/** What {@link acrossPlacements} measured: per placement, and what failed. */
export interface PlacementResults<T> {
  results: Map<Placement, T>;
  failures: string[];
  /** The placement whose figures count: pinned when it was measured, else shared. */
  counting: Placement;
}

/**
 * Runs `measure` once per placement, each on its own fresh server of that placement. A
 * placement that fails is reported in `failures` and the others still run; throws only when
 * every placement failed.
 */
export async function acrossPlacements<T>(
  progress: (message: string) => void,
  measure: (placement: Placement, server: NatsServer) => Promise<T>,
): Promise<PlacementResults<T>> {
  const { list, why } = placements();
  const failures: string[] = why ? [why] : [];
  const results = new Map<Placement, T>();
  for (const placement of list) {
    let server: NatsServer | undefined;
    try {
      server = await startServer(placement);
      progress(`${placement}: nats-server on ${server.url}, cpus ${await allowedCpus(server.pid)}`);
      results.set(placement, await measure(placement, server));
    } catch (err) {
      const message = describeError(err);
      progress(`${placement}: FAILED: ${message}`);
      failures.push(`${placement} placement: ${message}`);
    } finally {
      await server?.stop().catch(() => undefined);
    }
  }
  if (results.size === 0) throw new Error(failures.join("; "));
  return { results, failures, counting: results.has("pinned") ? "pinned" : "shared" };
}

/** Process CPU time (user + system, all threads) in ms since `since` (`process.cpuUsage()`). */
export function cpuMs(since?: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
}

/** The placement of profiles and single measurements: pinned when possible. */
export function countingPlacement(): Placement {
  return canPin() ? "pinned" : "shared";
}
