/**
 * `npm run demo:web`: starts a throwaway nats-server (JetStream + WebSocket) and serves the
 * built board app with `vite preview`, then prints the address to open in several windows.
 * Environment: PORT (default 4173; the next free one if taken).
 *
 * Stopping: Ctrl-C, SIGTERM or SIGHUP stop the preview and the server and exit 0. When the
 * nats-server dies on its own, the demo says so on stderr, stops and exits 1. When the process
 * that started the demo goes away without passing a signal on (npm SIGKILLed), the demo stops
 * too, so no server is left behind. The npm scripts `exec` this file (`demo:web`, the
 * workspace's `demo`), so npm's signals reach it directly, not a `sh -c` that waits.
 */
import { fileURLToPath } from "node:url";
import { startNatsServer } from "@statesync/node";
import { preview } from "vite";

const appDir = fileURLToPath(new URL("../..", import.meta.url));

const nats = await startNatsServer();
const pid = nats.pid;
let server: Awaited<ReturnType<typeof preview>> | undefined = undefined; // set once it listens
let stopping = false;
const stop = async (code: number): Promise<never> => {
  if (!stopping) {
    stopping = true;
    await server?.close().catch(() => undefined);
    await nats.stop().catch(() => undefined);
  }
  process.exit(code);
};
nats.onExit((exit) => {
  if (exit.expected || stopping) return;
  const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code ?? "unknown"}`;
  console.error(`\n  The demo's nats-server (pid ${pid}) exited (${how}); stopping the demo.\n`);
  console.error(nats.output().split("\n").slice(-10).join("\n"));
  void stop(1);
});
const onSignal = (): void => void stop(0);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);
// Orphaned (the parent died without passing a signal on): the kernel re-parents us.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void stop(0);
}, 500).unref();

server = await preview({
  root: appDir,
  logLevel: "warn",
  preview: { host: "127.0.0.1", port: Number(process.env.PORT ?? 4173) },
});
// vite's preview adds a SIGTERM listener of its own that closes the preview and exits at once,
// before the nats-server is stopped (the watchdog then stopped it): leave stopping to `stop`.
for (const listener of process.listeners("SIGTERM")) {
  if (listener !== onSignal) process.off("SIGTERM", listener);
}
const base = server.resolvedUrls?.local[0] ?? "http://127.0.0.1:4173/";
const url = `${base}?server=${encodeURIComponent(nats.wsUrl)}&board=main`;

console.log(`
  statesync collab board
  NATS server  ${nats.url} (WebSocket ${nats.wsUrl}, pid ${pid})
  Open         ${url}

  Open it in several windows (or browsers) and edit the board in each: every edit shows up
  everywhere. Reload a window: the board appears at once from IndexedDB, then catches up.
  Another board: change board=main in the address. Ctrl-C stops the demo.
`);
