import { AuthorizationError } from "@nats-io/nats-core";
import {
  isStateSyncError,
  JetStreamLog,
  type JetStreamLogOptions,
  type LogEntry,
} from "@statesync/core";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytes, rejection, uniqueStream, until } from "./helpers.js";
import { CLIENT_LINES, type ClientLine, type Closable } from "./support/client-lines.js";

let server: NatsServer;
const connections: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  server = await startNatsServer({
    extraConfig: `
authorization {
  users = [
    { user: admin, password: admin }
    { user: nopub, password: nopub, permissions: { publish: { deny: ["PERM.>"] } } }
    { user: noconsumer, password: noconsumer,
      permissions: { publish: { deny: ["$JS.API.CONSUMER.CREATE.PERM.>", "$JS.API.CONSUMER.CREATE.PERM"] } } }
  ]
}`,
  });
});
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  await server?.stop();
});

/** The connect error each line rejects with when the server refuses the credentials. */
const AUTH_ERRORS: Record<ClientLine["name"], () => Error> = {
  v2: () => Object.assign(new Error("auth"), { code: "AUTHORIZATION_VIOLATION" }),
  v3: () => new AuthorizationError("Authorization Violation"),
};

describe.each(CLIENT_LINES)("JetStreamLog faults, nats.js $name", (line) => {
  async function connect(user = "admin"): Promise<Closable> {
    const nc = await line.tcp(server.url, { user, pass: user });
    connections.push(nc);
    return nc;
  }

  /** A log on this client line. */
  const logOn = (o: JetStreamLogOptions) => new JetStreamLog({ ...line.logOptions, ...o });
  const openOn = (o: JetStreamLogOptions) => JetStreamLog.open({ ...line.logOptions, ...o });

  /** Appends, retrying while the server is still coming back. */
  async function appendEventually(log: JetStreamLog, data: string, id: string): Promise<number> {
    for (;;) {
      try {
        return (await log.appendUnconditional(bytes(data), id)).revision;
      } catch (e) {
        if (!isStateSyncError(e, "UNAVAILABLE")) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  describe("permissions", () => {
    it("maps a denied publish to PERMISSION_DENIED", async () => {
      const admin = await openOn({ connection: await connect(), stream: "PERM" });
      await admin.appendUnconditional(bytes("a"), "a");
      // The stream outlives this test (the other client line's run uses it too).
      const latest = (await admin.info()).latestRevision;
      // A long request timeout: the denial must come from the server's answer, not a timeout.
      const log = logOn({
        connection: await connect("nopub"),
        stream: "PERM",
        requestTimeoutMs: 30_000,
      });
      expect((await log.info()).latestRevision).toBe(latest);
      const started = Date.now();
      const err = await rejection(log.appendConditional(bytes("b"), latest, "b"));
      expect(isStateSyncError(err, "PERMISSION_DENIED"), String(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000); // well before the request timeout
      expect((await log.info()).latestRevision).toBe(latest);
      await log.close();
      await admin.close();
    });

    it("reports PERMISSION_DENIED quickly when consumers may not be created (follow and read)", async () => {
      const admin = await openOn({ connection: await connect(), stream: "PERM" });
      await admin.appendUnconditional(bytes("x"), "x");
      const log = logOn({
        connection: await connect("noconsumer"),
        stream: "PERM",
        requestTimeoutMs: 30_000,
      });
      const errors: unknown[] = [];
      const follower = log.follow(1, { onEntry: () => undefined, onError: (e) => errors.push(e) });
      await until(() => (errors.length > 0 ? true : undefined), 15_000);
      expect(isStateSyncError(errors[0], "PERMISSION_DENIED")).toBe(true);
      await follower.stop();
      const started = Date.now();
      const err = await rejection(
        (async () => {
          for await (const _ of log.read(1, 10)) void _;
        })(),
      );
      expect(isStateSyncError(err, "PERMISSION_DENIED"), String(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000); // well before the request timeout
      await log.close();
      await admin.close();
    });
  });

  describe("following across failures", () => {
    for (const transport of ["tcp", "websocket"] as const) {
      it(`follows across a server restart (${transport})`, async () => {
        const stream = uniqueStream();
        const nc =
          transport === "tcp"
            ? await connect()
            : await line.websocket(server.wsUrl, { user: "admin", pass: "admin" });
        if (transport === "websocket") connections.push(nc);
        const log = await openOn({ connection: nc, stream });
        // The writer uses the follower's transport: nats.js v3's `connect` and `wsconnect` each
        // set one process-wide transport factory, so a v3 connection made with one reconnects
        // with the other's transport (and never succeeds) once the other was called since.
        const writerNc =
          transport === "tcp"
            ? await connect()
            : await line.websocket(server.wsUrl, { user: "admin", pass: "admin" });
        if (transport === "websocket") connections.push(writerNc);
        const writer = await openOn({ connection: writerNc, stream });
        for (let i = 0; i < 5; i++) await writer.appendUnconditional(bytes(`${i}`), `m${i}`);
        const statuses: string[] = [];
        log.watchStatus((s) => statuses.push(s));
        const seen: LogEntry[] = [];
        const errors: unknown[] = [];
        const follower = log.follow(1, {
          onEntry: (e) => seen.push(e),
          onError: (e) => errors.push(e),
        });
        await until(() => (seen.length >= 5 ? true : undefined));
        await server.restart();
        await until(() => (log.status === "online" ? true : undefined));
        for (let i = 5; i < 10; i++) await appendEventually(writer, `${i}`, `m${i}`);
        await until(() => (seen.length >= 10 ? true : undefined), 30_000);
        await follower.stop();
        expect(errors).toEqual([]);
        expect(seen.map((e) => e.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(seen.map((e) => e.messageId)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
        expect(statuses).toContain("offline");
        expect(statuses.at(-1)).toBe("online");
        await log.close();
        await writer.close();
      });
    }

    it("reports LOG_REPLACED when the stream is deleted and recreated under a follower, and never re-creates it", async () => {
      const stream = uniqueStream();
      const nc = await connect();
      const log = await openOn({ connection: nc, stream });
      await log.appendUnconditional(bytes("a"), "a");
      const seen: LogEntry[] = [];
      const errors: unknown[] = [];
      log.follow(1, { onEntry: (e) => seen.push(e), onError: (e) => errors.push(e) });
      await until(() => (seen.length >= 1 ? true : undefined));
      const jsm = await line.admin(nc);
      await jsm.streams.delete(stream);
      const other = await openOn({ connection: await connect(), stream });
      for (let i = 0; i < 3; i++) await other.appendUnconditional(bytes(`new${i}`), `new${i}`);
      await until(() => (errors.length > 0 ? true : undefined), 30_000);
      // Deleted (TRUNCATED or LOG_REPLACED while the stream is missing), then another log.
      expect(
        errors.every((e) => isStateSyncError(e, "LOG_REPLACED")),
        String(errors),
      ).toBe(true);
      expect(seen.map((e) => e.messageId)).toEqual(["a"]);
      // Every later call says so; nothing reaches the new log through this one.
      const append = await log.appendUnconditional(bytes("late"), "late").catch((e) => e);
      expect(isStateSyncError(append, "LOG_REPLACED"), String(append)).toBe(true);
      expect((await other.info()).latestRevision).toBe(3);
      await log.close();
      await other.close();
    });
  });

  describe("a stream deleted and not created again", () => {
    it("the follower, reads and appends report LOG_REPLACED, as the guarantees say (issue 10, case 3)", async () => {
      const stream = uniqueStream();
      const nc = await connect();
      const log = await openOn({ connection: nc, stream });
      await log.appendUnconditional(bytes("a"), "a");
      const seen: LogEntry[] = [];
      const errors: unknown[] = [];
      log.follow(1, { onEntry: (e) => seen.push(e), onError: (e) => errors.push(e) });
      // And one at the tail, with nothing to deliver yet (as `statesync tail` follows).
      log.follow(2, { onEntry: (e) => seen.push(e), onError: (e) => errors.push(e) });
      await until(() => (seen.length >= 1 ? true : undefined));
      await new Promise((r) => setTimeout(r, 200)); // both consumers are in place
      await (await line.admin(nc)).streams.delete(stream);
      await until(() => (errors.length > 1 ? true : undefined), 30_000);
      expect(
        errors.every((e) => isStateSyncError(e, "LOG_REPLACED")),
        String(errors),
      ).toBe(true);
      const read = await rejection(
        (async () => {
          for await (const _ of log.read(1, 1));
        })(),
      );
      expect(isStateSyncError(read, "LOG_REPLACED"), String(read)).toBe(true);
      const append = await log.appendUnconditional(bytes("late"), "late").catch((e) => e);
      expect(isStateSyncError(append, "LOG_REPLACED"), String(append)).toBe(true);
      await log.close();
    });
  });

  describe("a connection that is not there yet", () => {
    it("is offline, fails calls with UNAVAILABLE after requestTimeoutMs, and comes online", async () => {
      let resolve: (nc: Closable) => void = () => undefined;
      const pending = new Promise<Closable>((r) => (resolve = r));
      const stream = uniqueStream();
      const log = logOn({ connection: pending, stream, requestTimeoutMs: 300 });
      expect(log.status).toBe("offline");
      const started = Date.now();
      const err = await rejection(log.info());
      expect(isStateSyncError(err, "UNAVAILABLE")).toBe(true);
      // It waited for its request timeout, not for the connection (which never came).
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      const statuses: string[] = [];
      log.watchStatus((s) => statuses.push(s));
      const seen: LogEntry[] = [];
      const follower = log.follow(1, { onEntry: (e) => seen.push(e) });
      resolve(await connect());
      await until(() => (log.status === "online" ? true : undefined));
      expect(statuses).toEqual(["online"]);
      await log.appendConditional(bytes("a"), 0, "a");
      await until(() => (seen.length === 1 ? true : undefined));
      await follower.stop();
      await log.close();
    });

    it("maps a rejected connection promise", async () => {
      const log = logOn({
        connection: Promise.reject(AUTH_ERRORS[line.name]()),
        stream: uniqueStream(),
      });
      expect(isStateSyncError(await rejection(log.info()), "PERMISSION_DENIED")).toBe(true);
      await log.close();
    });

    it("fails calls with UNAVAILABLE while the server is down and never closes the connection", async () => {
      const nc = await connect();
      const stream = uniqueStream();
      const log = await openOn({ connection: nc, stream, requestTimeoutMs: 500 });
      await log.appendUnconditional(bytes("a"), "a");
      const seen: LogEntry[] = [];
      const errors: unknown[] = [];
      log.follow(1, { onEntry: (e) => seen.push(e), onError: (e) => errors.push(e) });
      await until(() => (seen.length === 1 ? true : undefined));
      await server.kill("SIGKILL");
      await until(() => (log.status === "offline" ? true : undefined));
      expect(
        isStateSyncError(await rejection(log.appendUnconditional(bytes("b"), "b")), "UNAVAILABLE"),
      ).toBe(true);
      expect(isStateSyncError(await rejection(log.info()), "UNAVAILABLE")).toBe(true);
      await new Promise((r) => setTimeout(r, 1_500));
      await server.restart();
      await until(() => (log.status === "online" ? true : undefined));
      expect(await appendEventually(log, "b", "b")).toBe(2);
      await until(() => (seen.length === 2 ? true : undefined), 30_000);
      expect(seen.map((e) => e.messageId)).toEqual(["a", "b"]);
      expect(errors).toEqual([]);
      await log.close();
      expect(nc.isClosed()).toBe(false);
    });
  });
});
