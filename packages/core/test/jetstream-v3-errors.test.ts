// The nats.js v3 line's errors, thrown by its real error classes, reach JetStreamLog's callers
// as the same StateSyncError codes as v2's (the v3 adapter and `natsErrorInfo`), and a v3
// connection without @nats-io/jetstream's functions is refused. A fake v3 connection stands in
// for the server: what it throws is the case under test.
import { JetStreamApiError, JetStreamError } from "@nats-io/jetstream";
import { jserrors } from "@nats-io/jetstream/internal";
import {
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
} from "@nats-io/nats-core";
import {
  AppendConflictError,
  isStateSyncError,
  JetStreamLog,
  type JetStreamV3Module,
  type NatsV3ConnectionLike,
  type StreamInfoLike,
} from "@statesync/core";
import { describe, expect, it } from "vitest";

const STREAM = "V3ERR";

function streamInfo(): StreamInfoLike {
  return {
    config: { name: STREAM, subjects: [`${STREAM}.log`], retention: "limits", storage: "file" },
    created: "2024-01-01T00:00:00Z",
    state: { messages: 3, first_seq: 1, last_seq: 3 },
  };
}

/** A v3 connection (no `jetstream()` method) that never disconnects. */
function fakeConnection(): NatsV3ConnectionLike {
  return {
    info: { version: "2.10.27", max_payload: 1 << 20 },
    status: () => ({
      [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }),
      stop() {},
    }),
    closed: () => new Promise(() => undefined),
    isClosed: () => false,
  };
}

/** `@nats-io/jetstream`'s two functions, whose publish and purge throw `failure()`. */
function fakeModule(failure: () => unknown): JetStreamV3Module {
  return {
    jetstream: () => ({
      publish: async () => {
        throw failure();
      },
      consumers: { get: async () => Promise.reject(failure()) },
    }),
    jetstreamManager: async () => ({
      streams: {
        info: async () => streamInfo(),
        add: async () => streamInfo(),
        delete: async () => true,
        getMessage: async () => null,
        purge: async () => {
          throw failure();
        },
      },
      consumers: { add: async () => Promise.reject(failure()), delete: async () => true },
    }),
  };
}

async function appendFailure(failure: () => unknown): Promise<unknown> {
  const log = new JetStreamLog({
    connection: fakeConnection(),
    jetstream: fakeModule(failure),
    stream: STREAM,
  });
  try {
    await log.appendConditional(new Uint8Array([1]), 2, "m");
    throw new Error("expected a rejection");
  } catch (err) {
    return err;
  } finally {
    await log.close();
  }
}

const apiError = (err_code: number, code: number, description: string) =>
  new JetStreamApiError({ err_code, code, description });

describe("nats.js v3 errors as StateSyncError codes", () => {
  it("10071 wrong last sequence → CONFLICT with the latest revision", async () => {
    const err = await appendFailure(() => apiError(10071, 400, "wrong last sequence: 3"));
    expect(err).toBeInstanceOf(AppendConflictError);
    expect((err as AppendConflictError).latestRevision).toBe(3);
  });

  // Once the log has opened its stream, "stream not found" means the stream was deleted: the
  // log is gone for good (LOG_REPLACED, issue 10 case 3), whichever client line reports it.
  it("10059 stream not found after opening → LOG_REPLACED; 10054 too large → PAYLOAD_TOO_LARGE", async () => {
    const gone = await appendFailure(
      () =>
        new jserrors.StreamNotFoundError({
          err_code: 10059,
          code: 404,
          description: "stream not found",
        }),
    );
    expect(isStateSyncError(gone, "LOG_REPLACED"), String(gone)).toBe(true);
    const big = await appendFailure(() => apiError(10054, 400, "message size exceeds maximum"));
    expect(isStateSyncError(big, "PAYLOAD_TOO_LARGE"), String(big)).toBe(true);
  });

  it("a permission violation (RequestError caused by it) → PERMISSION_DENIED", async () => {
    const err = await appendFailure(
      () =>
        new RequestError("Permissions Violation for Publish to V3ERR.log", {
          cause: new PermissionViolationError(
            "Permissions Violation for Publish to V3ERR.log",
            "publish",
            `${STREAM}.log`,
          ),
        }),
    );
    expect(isStateSyncError(err, "PERMISSION_DENIED"), String(err)).toBe(true);
  });

  it("timeouts and 503 no responders → UNAVAILABLE with v2's codes", async () => {
    const cases: Array<[() => unknown, string]> = [
      [() => new TimeoutError(), "TIMEOUT"],
      [
        () =>
          new jserrors.JetStreamNotEnabled("jetstream is not enabled", {
            cause: new RequestError("no responders", {
              cause: new NoRespondersError(`$JS.API.STREAM.MSG.GET.${STREAM}`),
            }),
          }),
        "503",
      ],
      [() => new JetStreamError("invalid ack response"), undefined as unknown as string],
    ];
    for (const [failure, natsCode] of cases) {
      const err = await appendFailure(failure);
      expect(isStateSyncError(err, "UNAVAILABLE"), String(err)).toBe(true);
      expect((err as { details?: { natsCode?: string } }).details?.natsCode).toBe(natsCode);
      // No responders: no stream took it, nothing stored (a definite failure); else unknown.
      const notSent = (err as { details?: { notSent?: boolean } }).details?.notSent;
      expect(notSent).toBe(natsCode === "503" ? true : undefined);
    }
  });

  // A request failed because nats.js closed the connection: final, whichever line says it; the
  // append's outcome is unknown (no `notSent`).
  it("a closed connection → CONNECTION_CLOSED with v2's code", async () => {
    const err = await appendFailure(() => new RequestError("connection closed"));
    expect(isStateSyncError(err, "CONNECTION_CLOSED"), String(err)).toBe(true);
    expect((err as { details: Record<string, unknown> }).details).toMatchObject({
      natsCode: "CONNECTION_CLOSED",
    });
    expect((err as { details: Record<string, unknown> }).details.notSent).toBeUndefined();
  });

  it("truncateBefore maps the same way (10059 after opening → LOG_REPLACED)", async () => {
    const log = new JetStreamLog({
      connection: fakeConnection(),
      jetstream: fakeModule(() => apiError(10059, 404, "stream not found")),
      stream: STREAM,
    });
    const err = await log.truncateBefore(3).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(err, "LOG_REPLACED"), String(err)).toBe(true);
    await log.close();
  });
});

describe("a v3 connection without @nats-io/jetstream's functions", () => {
  it("is refused with VALIDATION at construction", () => {
    let err: unknown;
    try {
      new JetStreamLog({ connection: fakeConnection(), stream: STREAM });
    } catch (e) {
      err = e;
    }
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
  });

  it("is refused with VALIDATION at the first call when it comes as a promise", async () => {
    const log = new JetStreamLog({ connection: Promise.resolve(fakeConnection()), stream: STREAM });
    const err = await log.info().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    await log.close();
  });
});
