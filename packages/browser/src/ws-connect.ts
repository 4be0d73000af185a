import { StateSyncError, serversText } from "@statesync/core";
import { connect, type ConnectionOptions, type NatsConnection } from "nats.ws";

/** nats.ws's `wsFactory` (`WsConnectionOptions`, not in its exported `ConnectionOptions` type). */
type WsFactory = (
  url: string,
  options: ConnectionOptions,
) => Promise<{ socket: WebSocket; encrypted: boolean }>;

/**
 * `connect` of `nats.ws` that fails at once when a server closes the WebSocket while the
 * connection is being made, instead of after nats.ws's whole `timeout` (20 s by default).
 *
 * Why: nats.ws 1.30 ignores a socket that closes before the server's `INFO` (`WsTransport`'s
 * `onclose` returns while not connected), and one that closes after `INFO` but before the `PONG`
 * that ends the handshake (`ProtocolHandler.dial` awaits that `PONG` or its timer, and a closed
 * transport settles neither), so the attempt waits out its `timeout` and rejects `TIMEOUT`. A
 * server that shuts down (a restart) just after it accepted the upgrade does exactly that, and a
 * tab opened at that moment stayed `offline` for 20 s (a trial: 1 run in 5 of a restart while
 * the leading tab closed). Each socket of the attempt is made here (nats.ws's `wsFactory`,
 * wrapping one given in `options`); when the newest closes before the attempt settled and, a
 * turn later, nats.ws has neither settled it (an `-ERR` for refused credentials rejects it
 * `PERMISSION_DENIED` first) nor dialled its next server, the attempt rejects `UNAVAILABLE`. A
 * connection the abandoned attempt still makes later is closed. A socket that closes before any
 * message is also reported to nats.ws as a failed dial (its `onerror`), so its own reconnects
 * move on at once too; one closed between `INFO` and `PONG` during a reconnect still waits
 * (README, a known gap).
 *
 * Resolves to the connection; rejects with nats.ws's error, or that `UNAVAILABLE`
 * `StateSyncError` (`details.closedEarly: true`).
 */
export async function connectWs(options: ConnectionOptions): Promise<NatsConnection> {
  const given = (options as { wsFactory?: WsFactory }).wsFactory;
  let fail: ((error: StateSyncError) => void) | undefined;
  const closedEarly = new Promise<never>((_, reject) => (fail = reject));
  closedEarly.catch(() => undefined);
  // The newest dial: taken when nats.ws asks for a socket, before a given factory answers, so
  // that a dial in progress (a user's factory may take a while) counts as having moved on.
  let latest: object | undefined;
  let latestUrl: string | undefined;
  const wsFactory: WsFactory = async (url, opts) => {
    const dial = {};
    latest = dial;
    latestUrl = url;
    const made = given
      ? await given(url, opts)
      : { socket: new WebSocket(url), encrypted: url.startsWith("wss://") };
    const socket = made.socket;
    let spoke = false;
    socket.addEventListener("message", () => (spoke = true), { once: true });
    const closed = () => {
      // Before any message: told to nats.ws as the error a failed dial raises (its `onerror`
      // rejects a dial not yet connected), so that its own reconnects, which this function no
      // longer watches, move on too instead of waiting out their `timeout`.
      if (!spoke) socket.onerror?.({ type: "error", message: CLOSED_EARLY } as unknown as Event);
      // A turn later: nats.ws has read what the socket delivered (an `-ERR` rejects the attempt
      // itself) or moved on to its next server (a newer socket), and neither happened.
      setTimeout(() => latest === dial && fail?.(closedEarlyError(url)), 0);
    };
    socket.addEventListener("close", closed, { once: true });
    return made;
  };
  const attempt = connect({ ...options, wsFactory } as ConnectionOptions);
  try {
    return await Promise.race([attempt, closedEarly]);
  } catch (err) {
    attempt.then((nc) => nc.close()).catch(() => undefined);
    // nats.ws's own rejection of a dial told so (`onerror` above) reads as this function's.
    const told = (err as { message?: unknown } | null)?.message === CLOSED_EARLY;
    throw told && latestUrl !== undefined ? closedEarlyError(latestUrl) : err;
  } finally {
    fail = undefined;
  }
}

const CLOSED_EARLY =
  "the server closed the WebSocket before the connection was made (shutting down?)";

function closedEarlyError(url: string): StateSyncError {
  return new StateSyncError(
    "UNAVAILABLE",
    `cannot connect to ${serversText(url)}: ${CLOSED_EARLY}`,
    { details: { closedEarly: true } },
  );
}
