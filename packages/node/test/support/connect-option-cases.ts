/**
 * nats.js connect options that nats.js takes in silence and then acts on badly (core's
 * nats-connect-options.ts says what each does), each with the option it must be refused at, and
 * values nats.js documents, which must pass. Shared by the Node and browser tests.
 */
export const refusedConnectOptions: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
  // A new user's trial: the replica stayed offline for good against a healthy server.
  [{ timeout: -1 }, "timeout"],
  [{ timeout: 0 }, "timeout"],
  [{ timeout: 1.5 }, "timeout"],
  [{ timeout: 2 ** 31 }, "timeout"], // a longer timer fires at once
  [{ timeout: Number.NaN }, "timeout"],
  [{ timeout: "20000" }, "timeout"],
  [{ pingInterval: 0 }, "pingInterval"], // nats.js's 2 min, not "no PINGs"
  [{ pingInterval: -5 }, "pingInterval"], // a PING every millisecond
  [{ pingInterval: Infinity }, "pingInterval"],
  [{ maxPingOut: 0 }, "maxPingOut"],
  [{ maxPingOut: -1 }, "maxPingOut"], // never reached: a dead server never noticed
  [{ maxPingOut: 1.5 }, "maxPingOut"],
  [{ maxReconnectAttempts: -2 }, "maxReconnectAttempts"],
  [{ maxReconnectAttempts: 2.5 }, "maxReconnectAttempts"],
  [{ reconnectTimeWait: -1 }, "reconnectTimeWait"], // redials in a loop
  [{ reconnectTimeWait: 2 ** 31 }, "reconnectTimeWait"],
  [{ reconnectJitter: -1 }, "reconnectJitter"],
  [{ reconnectJitterTLS: 0.5 }, "reconnectJitterTLS"],
  [{ port: 4222 }, "port"], // nats.js refuses it beside servers
  [{ reconnect: "no" }, "reconnect"], // read as true
  [{ reconnectDelayHandler: 100 }, "reconnectDelayHandler"],
  [{ name: 7 }, "name"],
];

/** Typos: refused naming the key. */
export const unknownConnectOptions = ["pingIntervall", "timeoutMs", "maxReconnects"];

/** Values nats.js documents: they pass. */
export const acceptedConnectOptions: ReadonlyArray<Record<string, unknown>> = [
  { timeout: 1, pingInterval: 1, maxPingOut: 1 },
  { maxReconnectAttempts: -1, reconnectTimeWait: 0, reconnectJitter: 0, reconnectJitterTLS: 0 },
  { maxReconnectAttempts: 0 },
  { timeout: 2 ** 31 - 1, pingInterval: 600_000, reconnectDelayHandler: () => 100 },
  { name: "me", user: "u", pass: "p", noEcho: true, ignoreClusterUpdates: true, debug: false },
];
