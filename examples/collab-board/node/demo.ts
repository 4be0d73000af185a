/**
 * `npm run demo:web`: starts a throwaway nats-server (JetStream + WebSocket) and serves the
 * built board app with `vite preview`, then prints the address to open in several windows.
 * Ctrl-C stops both. Environment: PORT (default 4173; the next free one if taken).
 */
import { fileURLToPath } from "node:url";
import { startNatsServer } from "@statesync/node";
import { preview } from "vite";

const appDir = fileURLToPath(new URL("../..", import.meta.url));

const nats = await startNatsServer();
const server = await preview({
  root: appDir,
  logLevel: "warn",
  preview: { host: "127.0.0.1", port: Number(process.env.PORT ?? 4173) },
});
const base = server.resolvedUrls?.local[0] ?? "http://127.0.0.1:4173/";
const url = `${base}?server=${encodeURIComponent(nats.wsUrl)}&board=main`;

console.log(`
  statesync collab board
  NATS server  ${nats.url} (WebSocket ${nats.wsUrl})
  Open         ${url}

  Open it in several windows (or browsers) and edit the board in each: every edit shows up
  everywhere. Reload a window: the board appears at once from IndexedDB, then catches up.
  Another board: change board=main in the address. Ctrl-C stops the demo.
`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  await nats.stop();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
