/**
 * Runs one nats-server for `startNatsServer` and ties its life to the parent's: started with
 * `fork` (an IPC channel), it kills the server when the channel closes, which the OS does when
 * the parent exits for any reason, SIGKILL included. So no server outlives a test process.
 *
 * When the parent is gone it also removes the server's temporary directory (the optional third
 * argument), as the parent's `stop()` would have; a `restart()` (the server exits while the
 * parent lives) keeps it.
 *
 * argv: <nats-server binary> <config file> [directory to remove]. Messages to the parent:
 * `{ type: "pid", pid }`, `{ type: "exit", code, signal, output }` (the last 40 lines of the
 * server's output), `{ type: "error", message }`.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";

const [bin, config, removeOnOrphan] = process.argv.slice(2);
if (!bin || !config) {
  process.stderr.write("usage: nats-server-watchdog <nats-server> <config> [dir]\n");
  process.exit(2);
}
let orphaned = false;
/** The parent announced this exit (stop, restart, kill): keep the directory. */
let expected = false;
process.on("message", (m: { type?: string }) => {
  if (m?.type === "expect-exit") expected = true;
});
// The parent starts this process in a process group of its own (with the server), so a signal
// to the parent's group (Ctrl-C, `timeout`) does not reach it; one sent to this group anyway
// must not end it before it cleans up: it stays to see whether the parent is gone.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);

/** Exits, first removing the directory when the parent is gone (best effort). */
const exit = (code: number): never => {
  if (orphaned && !expected && removeOnOrphan) {
    try {
      rmSync(removeOnOrphan, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // best effort: a leftover directory in the temporary directory
    }
  }
  process.exit(code);
};

/**
 * Sends `message` to the parent if its channel is open. The parent may be gone before this
 * process has read the channel's end (`connected` is still true): the write then fails, and
 * without a callback Node emits that as an `error` event that kills this process before it
 * cleans up (found in CI: a Ctrl-C to the process group, the server's exit handled first, the
 * directory left behind). A message that cannot reach the parent is dropped.
 */
const send = (message: object): void => {
  if (process.connected) process.send?.(message, undefined, {}, () => undefined);
};

// The server's output passes through this process, its last lines kept: the "exit" message
// carries them, sent once the output has all been read ("close"). With the output inherited,
// the parent could read the message before the output (separate pipes): a CI run saw "exited
// before it was ready" with no output, the server's "address already in use" lost.
const server = spawn(bin, ["-c", config], { stdio: ["ignore", "pipe", "pipe"] });
const lastLines: string[] = [];
// The parent gone, its pipes are too: a write that fails must not end this process before it
// stops the server and cleans up.
for (const out of [process.stdout, process.stderr]) out.on("error", () => undefined);
for (const [from, to] of [
  [server.stdout, process.stdout],
  [server.stderr, process.stderr],
] as const) {
  from.on("data", (chunk: Buffer) => {
    if (!to.destroyed) to.write(chunk);
    lastLines.push(
      ...chunk
        .toString("utf8")
        .split("\n")
        .filter((l) => l !== ""),
    );
    lastLines.splice(0, Math.max(0, lastLines.length - 40));
  });
}
server.on("spawn", () => send({ type: "pid", pid: server.pid }));
server.on("error", (err) => {
  send({ type: "error", message: err.message });
  exit(1);
});
server.on("close", (code, signal) => {
  send({ type: "exit", code, signal, output: lastLines.join("\n") });
  if (expected || !process.connected) {
    orphaned ||= !process.connected;
    if (process.connected) process.disconnect();
    exit(0);
  }
  // Not announced: the parent may be dying too (a signal to the process group), and a loaded
  // machine or a parent with its own SIGINT handler may take a while (a fixed 1 s grace lost
  // that race in CI and left the directory behind). So stay until the parent is gone (its
  // channel closes, or this process is re-parented: clean up) or announces what comes next
  // (stop, restart: keep the directory). A parent that lives on loses nothing by this.
  const parent = process.ppid;
  const poll = setInterval(() => {
    const gone = !process.connected || process.ppid !== parent;
    if (!gone && !expected) return;
    clearInterval(poll);
    orphaned ||= gone;
    if (process.connected) process.disconnect();
    exit(0);
  }, 50);
});

process.on("disconnect", () => {
  orphaned = true;
  if (server.exitCode !== null || server.signalCode !== null) exit(0);
  server.kill("SIGTERM");
  server.kill("SIGCONT"); // a server frozen by SIGSTOP acts on SIGTERM only once resumed
  setTimeout(() => server.kill("SIGKILL"), 5_000).unref();
  setTimeout(() => exit(0), 10_000).unref();
});
