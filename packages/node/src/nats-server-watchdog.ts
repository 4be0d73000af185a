/**
 * Runs one nats-server for `startNatsServer` and ties its life to the parent's: started with
 * `fork` (an IPC channel), it kills the server when the channel closes, which the OS does when
 * the parent exits for any reason, SIGKILL included. So no server outlives a test process.
 *
 * argv: <nats-server binary> <config file>. Messages to the parent: `{ type: "pid", pid }`,
 * `{ type: "exit", code, signal }`, `{ type: "error", message }`.
 */
import { spawn } from "node:child_process";

const [bin, config] = process.argv.slice(2);
if (!bin || !config) {
  process.stderr.write("usage: nats-server-watchdog <nats-server> <config>\n");
  process.exit(2);
}

const send = (message: object): void => {
  if (process.connected) process.send?.(message);
};

const server = spawn(bin, ["-c", config], { stdio: ["ignore", "inherit", "inherit"] });
server.on("spawn", () => send({ type: "pid", pid: server.pid }));
server.on("error", (err) => {
  send({ type: "error", message: err.message });
  process.exit(1);
});
server.on("exit", (code, signal) => {
  send({ type: "exit", code, signal });
  if (process.connected) process.disconnect();
  process.exit(0);
});

process.on("disconnect", () => {
  if (server.exitCode !== null || server.signalCode !== null) process.exit(0);
  server.kill("SIGTERM");
  setTimeout(() => {
    server.kill("SIGKILL");
    process.exit(0);
  }, 5_000).unref();
});
