/**
 * Ends a reconnection attempt of nats.js whose socket closed during the handshake.
 *
 * Why: nats.js (v2 `nats` and `nats.ws`, v3 `@nats-io/nats-core`) makes its reconnection attempts
 * itself (`dialLoop`): each one opens a socket, reads the server's INFO, sends CONNECT and PING,
 * and waits for the PONG or its connect `timeout` (20 s by default). When the socket closes in
 * between (a server shutting down, a proxy or load balancer cutting the connection), nats.js sees
 * it only as one more `disconnect` (the transport's `closed()` calls `disconnected()`, whose
 * `dialLoop()` returns the loop already running) and never rejects the PONG it waits for: the
 * attempt waits out the whole `timeout` on a dead socket before the next one starts. A fault trial
 * (a proxy cutting new connections mid-handshake for 2 to 8 s) saw replicas stay `offline` 20 s
 * and more after the cutting had stopped, some of them twice in a row (42 s).
 *
 * The client's protocol handler keeps, while an attempt waits for its PONG, `connectError` (the
 * function that rejects that PONG) and `transport` (that attempt's socket, `isClosed` once it
 * closed). When the attempt's transport is closed and the PONG is still awaited, nothing can
 * answer it any more: rejecting it now makes nats.js go on to its next attempt after its usual
 * `reconnectTimeWait`, as it does for a refused dial. These are not public API: the shape is
 * checked at each call, and a client without it is left alone (as before). A connection that
 * is up (`connected`) or an attempt whose socket is open is never touched.
 *
 * Returns true when it ended such an attempt.
 */
export function endClosedDial(connection: object): boolean {
  const protocol = (connection as { protocol?: unknown }).protocol as
    { connected?: unknown; connectError?: unknown; transport?: { isClosed?: unknown } } | undefined;
  if (typeof protocol !== "object" || protocol === null) return false;
  const reject = protocol.connectError;
  if (protocol.connected !== false || typeof reject !== "function") return false;
  if (protocol.transport?.isClosed !== true) return false;
  (reject as (err: Error) => void).call(
    protocol,
    new Error("the connection closed during the handshake (before the server's PONG)"),
  );
  return true;
}
