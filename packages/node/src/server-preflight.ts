import { connect as dial, type Socket } from "node:net";
import { serversText, StateSyncError } from "@statesync/core";

/**
 * Whether a server of `servers` speaks before nats.js is given the connection attempt: each is
 * dialled over TCP at once and the first bytes of one of them (its `INFO`) end the check.
 *
 * Why: nats.js v2 (`NodeTransport`) waits for a server's `INFO` without a deadline of its own;
 * when its `timeout` ends the attempt first, it rejects but closes the socket only if the
 * connection had succeeded, so a server that accepts TCP and never answers (a hung process, a
 * port forwarded to nothing, a wrong port) left the socket open for good: every attempt of the
 * retry loop leaked one, and a replica closed meanwhile kept its process alive forever (a
 * fresh-eyes trial). This check owns its sockets and always destroys them.
 *
 * Resolves with the first server (as given) that sent something, or undefined when every dial
 * failed (refused, unresolvable, or closed by the server before it said anything: nats.js then
 * fails at once, with its own error, and leaks nothing). The caller puts that server first: with a silent server in the list, nats.js
 * would otherwise dial it first about half the time (it shuffles the list) and leak that socket
 * (a fresh-eyes trial: the process never exited, and the replica waited 20 s to connect). Rejects `UNAVAILABLE` when
 * no server spoke within `timeoutMs` (none accepted: nats.js's own dial has no deadline either;
 * or one accepted and stayed silent), and `CLOSED` when `signal` aborts. Skipped for TLS-first servers (`handshakeFirst`), which say nothing before
 * the handshake.
 */
export function serverSpeaks(
  servers: string | readonly string[] | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const list = typeof servers === "string" ? [servers] : servers?.length ? servers : ["127.0.0.1"];
  const targets = list
    .map((server) => ({ server, at: hostPort(server) }))
    .filter((t) => t.at !== undefined);
  if (targets.length === 0) return Promise.resolve(undefined);
  return new Promise<string | undefined>((resolve, reject) => {
    const sockets: Socket[] = [];
    let accepted = 0;
    let failed = 0;
    const end = (error?: StateSyncError, spoke?: string) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", abort);
      for (const s of sockets) s.destroy();
      if (error) reject(error);
      else resolve(spoke);
    };
    const abort = () => end(new StateSyncError("CLOSED", "connecting was cancelled"));
    const timer = setTimeout(() => {
      const why =
        accepted === 0
          ? `no server accepted a connection within ${timeoutMs} ms`
          : `the server accepted the connection but sent nothing within ${timeoutMs} ms (not a NATS server, or one that hangs)`;
      const to = serversText(servers);
      end(
        new StateSyncError("UNAVAILABLE", `cannot connect to ${to}: ${why}`, {
          details: { timeoutMs },
        }),
      );
    }, timeoutMs);
    if (signal?.aborted) return abort();
    signal?.addEventListener("abort", abort, { once: true });
    for (const { server, at } of targets) {
      const socket = dial({ host: at!.host, port: at!.port });
      sockets.push(socket);
      socket.once("connect", () => (accepted += 1));
      socket.once("data", () => end(undefined, server));
      // Counted on "close", which follows an "error" too: a server that accepts and closes at
      // once (one shutting down while a replica dials) raises no error, and was waited on for
      // the whole `timeoutMs` (20 s). An "error" without a listener would be thrown.
      socket.on("error", () => undefined);
      socket.once("close", () => {
        failed += 1;
        if (failed === targets.length) end();
      });
    }
  });
}

/** `host` and `port` of a server URL as nats.js reads it (`nats://h:p`, `tls://h`, `h:p`, `h`). */
function hostPort(server: string): { host: string; port: number } | undefined {
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`);
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    return host === "" ? undefined : { host, port: url.port === "" ? 4222 : Number(url.port) };
  } catch {
    return undefined; // nats.js refuses it with its own error
  }
}
