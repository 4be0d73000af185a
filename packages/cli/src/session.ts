/**
 * A command's time on the server: one `nats` (TCP) connection made from the common options, the
 * state's log on it, and the stream's own information. Every command runs inside
 * {@link withSession}, which closes the connection whatever happens.
 */
import { access } from "node:fs/promises";
import {
  connectNats,
  DEFAULT_PING_INTERVAL_MS,
  JetStreamLog,
  resolveLayout,
  serversText,
  StateSyncError,
  type JetStreamLayout,
} from "@statesync/node";
import {
  credsAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
  type StreamInfo,
} from "nats";
import { assertKeyFits } from "./layout-check.js";
import { readOperatorFile } from "./operator-file.js";
import type { CommonOptions } from "./options.js";

/** Largest `--creds` file read, bytes (a creds file is about 1 KiB). */
const MAX_CREDS_BYTES = 1024 * 1024;

/** An open connection and where the state lives. */
export interface Session {
  readonly nc: NatsConnection;
  readonly options: CommonOptions;
  readonly layout: JetStreamLayout;
  /** The server's version, from its INFO. */
  readonly serverVersion: string;
}

async function readable(path: string, flag: string): Promise<string> {
  try {
    await access(path);
    return path;
  } catch (cause) {
    throw new StateSyncError("VALIDATION", `${flag} ${path} cannot be read`, { cause });
  }
}

/** The `nats` connect options of the common options (credentials, TLS, timeout). */
export async function connectOptionsOf(
  o: CommonOptions,
  follow: boolean,
): Promise<ConnectionOptions> {
  const options: ConnectionOptions = {
    servers: o.server.split(",").map((s) => s.trim()),
    name: "statesync-cli",
    timeout: o.timeout,
    // A one-shot command fails rather than waits; `tail` rides out server restarts.
    maxReconnectAttempts: follow ? -1 : 2,
    reconnectTimeWait: 500,
    // A server that stops answering is noticed after 20-30 s, not nats.js's 4-6 min.
    pingInterval: DEFAULT_PING_INTERVAL_MS,
  };
  if (o.creds !== undefined) {
    const path = await readable(o.creds, "--creds");
    const creds = await readOperatorFile(path, MAX_CREDS_BYTES, `--creds ${path}`);
    options.authenticator = credsAuthenticator(new Uint8Array(creds));
  }
  if (o.user !== undefined) {
    options.user = o.user;
    options.pass = o.password;
  }
  if (o.token !== undefined) options.token = o.token;
  if (o.inboxPrefix !== undefined) options.inboxPrefix = o.inboxPrefix;
  if (o.tlsCert !== undefined || o.tlsCa !== undefined) {
    options.tls = {
      ...(o.tlsCert !== undefined && { certFile: await readable(o.tlsCert, "--tls-cert") }),
      ...(o.tlsKey !== undefined && { keyFile: await readable(o.tlsKey, "--tls-key") }),
      ...(o.tlsCa !== undefined && { caFile: await readable(o.tlsCa, "--tls-ca") }),
    };
  }
  return options;
}

/**
 * Connects with the common options, runs `use` and closes the connection. Throws (see
 * `connectNats`) `UNAVAILABLE` when no server answers, `PERMISSION_DENIED` when it refuses the
 * credentials or the TLS client certificate.
 */
export async function withSession<R>(
  o: CommonOptions,
  use: (session: Session) => Promise<R>,
  { follow = false } = {},
): Promise<R> {
  const layout = resolveLayout(o.stream, o.key, o.subjectPrefix);
  const options = await connectOptionsOf(o, follow);
  const nc: NatsConnection = await connectNats(options);
  try {
    return await use({ nc, options: o, layout, serverVersion: nc.info?.version ?? "unknown" });
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * The stream's information. Throws `STREAM_CONFIG` when the stream does not exist (a mistyped
 * `--stream` never creates one), `PERMISSION_DENIED` or `UNAVAILABLE`.
 */
export async function streamInfo(s: Session): Promise<StreamInfo> {
  try {
    const jsm = await s.nc.jetstreamManager({ timeout: s.options.timeout, checkAPI: false });
    return await jsm.streams.info(s.layout.stream);
  } catch (cause) {
    const apiCode = (cause as { api_error?: { err_code?: number } }).api_error?.err_code;
    if (apiCode === 10059) {
      throw new StateSyncError(
        "STREAM_CONFIG",
        `stream ${s.layout.stream} does not exist on ${serversText(s.options.server.split(",").map((x) => x.trim()))}`,
        { cause, details: { stream: s.layout.stream } },
      );
    }
    const code = (cause as { code?: unknown }).code;
    const message = (cause as Error).message;
    if (code === "503") {
      // Nobody answered the JetStream API: a fresh-eyes trial read only "…: 503".
      const version = s.nc.info ? ` (nats-server ${s.nc.info.version})` : "";
      throw new StateSyncError(
        "UNAVAILABLE",
        `JetStream is not reachable on ${s.options.server}${version}: nobody answered $JS.API.STREAM.INFO.${s.layout.stream} (503 no responders). Enable JetStream on the server (nats-server -js) or for this account`,
        { cause, details: { stream: s.layout.stream, jetstream: "unreachable" } },
      );
    }
    // A user who may subscribe only on its own inbox prefix (docs/permissions.md).
    const inbox = /Subscription to "_INBOX\./.test(message) ? ": pass its --inbox-prefix" : "";
    throw new StateSyncError(
      code === "PERMISSIONS_VIOLATION" ? "PERMISSION_DENIED" : "UNAVAILABLE",
      `cannot read stream ${s.layout.stream}: ${message}${inbox}`,
      { cause },
    );
  }
}

/**
 * How a command uses the log: only reads it (the default: a sealed stream is read, and a write
 * is refused), or `write`s to it (`create`: the import, which may create the stream, writes).
 * A fresh-eyes trial found every command refusing a sealed stream, `history` and `info` too.
 */
export interface LogUse {
  readonly write?: boolean;
  readonly create?: boolean;
}

/**
 * The state's log on the session's connection, stream opened and checked (`STREAM_CONFIG` when
 * its configuration could drop history, or, for a command that writes, is sealed). Only
 * `create` (the import) may create the stream.
 */
export async function openLog(
  s: Session,
  { write = false, create = false }: LogUse = {},
): Promise<JetStreamLog> {
  // A clear error for a missing stream, and for --key on a stream of one state.
  if (!create) assertKeyFits((await streamInfo(s)).config.subjects, s.layout);
  return JetStreamLog.open({
    connection: s.nc,
    stream: s.layout.stream,
    key: s.options.key,
    subjectPrefix: s.options.subjectPrefix,
    create,
    readOnly: !write && !create,
    requestTimeoutMs: s.options.timeout,
  });
}

/** Opens the log, runs `use`, closes the log (never the connection). */
export async function withLog<R>(
  s: Session,
  use: (log: JetStreamLog) => Promise<R>,
  options: LogUse = {},
): Promise<R> {
  const log = await openLog(s, options);
  try {
    return await use(log);
  } finally {
    await log.close();
  }
}
