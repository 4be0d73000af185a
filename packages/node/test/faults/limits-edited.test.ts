import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { NatsConnection } from "nats";
import {
  JetStreamLog,
  startNatsServer,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { tcp, uniqueStream, until, useNatsServer } from "../helpers.js";
import { CLIENT_LINES } from "../support/client-lines.js";
import { credentials, documentedConfigs, tcpAs } from "../support/permissions.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 5: an operator set `max_msgs: 3` on the stream while a writer was live; 10
 * conditional updates and one unconditional committed with no event, and the stream then held 3
 * entries; only new replicas saw STREAM_CONFIG. Live writers and followers now check the
 * configuration after every reconnection, when the server's stream-update advisory says the
 * stream was edited, and rarely otherwise (jittered), and report a configuration that can drop
 * history as a STREAM_CONFIG event.
 */

/** Sets `max_msgs` (3: a limit that drops history) on `stream` as an operator would. */
async function limitStream(nc: NatsConnection, stream: string, maxMsgs = 3): Promise<void> {
  const jsm = await nc.jetstreamManager();
  const si = await jsm.streams.info(stream);
  await jsm.streams.update(stream, { ...si.config, max_msgs: maxMsgs });
}

const TEN_MINUTES = 600_000;
const codes = (errors: StateSyncError[]) => errors.map((e) => e.code);

describe("a stream limit edited while replicas are live (real nats-server)", () => {
  const ctx = useNatsServer();

  it("the live writer and a follower report STREAM_CONFIG (periodic check)", async () => {
    const stream = uniqueStream("LIMITS");
    const events: Record<string, StateSyncError[]> = { writer: [], follower: [] };
    const open = (clientId: "writer" | "follower") =>
      openLedger({
        servers: ctx.server.url,
        stream,
        clientId,
        streamCheckIntervalMs: 300,
        onError: (e) => events[clientId]!.push(e),
      });
    const writer = await open("writer");
    const follower = await open("follower");
    closeAtEnd(writer, follower);
    await writer.update("increment", { opId: "w0", by: 1 });
    const admin = await tcp(ctx.server.url);
    try {
      await limitStream(admin, stream);
    } finally {
      await admin.close();
    }
    for (const name of ["writer", "follower"] as const) {
      await until(() => (events[name]!.some((e) => e.code === "STREAM_CONFIG") ? true : undefined));
    }
    const reported = events.writer!.filter((e) => e.code === "STREAM_CONFIG");
    expect(reported[0]!.message).toMatch(/max_msgs/);
    // Once per distinct problem, not once per check.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(events.writer!.filter((e) => e.code === "STREAM_CONFIG")).toHaveLength(1);
  });

  // Regression test (fresh-eyes trial): a replica that reported STREAM_CONFIG still said
  // `writable: true` until an update of its own failed (one that never wrote, for good).
  it("both replicas are not writable while the limit stands, and writable again once it is taken back", async () => {
    const stream = uniqueStream("LIMITS_W");
    const open = (clientId: string) =>
      openLedger({ servers: ctx.server.url, stream, clientId, streamCheckIntervalMs: 300 });
    const writer = await open("writer");
    const follower = await open("follower");
    closeAtEnd(writer, follower);
    await writer.update("increment", { opId: "w0", by: 1 });
    const admin = await tcp(ctx.server.url);
    try {
      await limitStream(admin, stream);
      for (const r of [writer, follower]) {
        await until(() => (r.writable ? undefined : true));
        expect(r.writeError?.code).toBe("STREAM_CONFIG");
        expect(r.status).toBe("live"); // it still follows
      }
      await limitStream(admin, stream, -1);
      for (const r of [writer, follower]) await until(() => (r.writable ? true : undefined));
    } finally {
      await admin.close();
    }
    await writer.update("increment", { opId: "w1", by: 1 });
    await follower.update("increment", { opId: "f1", by: 1 });
    await until(() => (writer.revision === follower.revision ? true : undefined));
    expect(writer.state).toEqual(follower.state);
  });

  it("edited and restored while a writer and a follower work: both report it, the history checks out", async () => {
    const stream = uniqueStream("LIMITS_H");
    const events: Record<string, string[]> = { writer: [], follower: [] };
    const open = (clientId: "writer" | "follower") =>
      openLedger({
        servers: ctx.server.url,
        stream,
        clientId,
        streamCheckIntervalMs: 300,
        onError: (e) => events[clientId]!.push(e.code),
      });
    const replicas: Record<string, LedgerSync> = {
      writer: await open("writer"),
      follower: await open("follower"),
    };
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(history, [
      { name: "writer", sync: replicas.writer!, kind: "mixed", pauseMs: 5 },
    ]);
    const admin = await tcp(ctx.server.url);
    try {
      await workload.waitForOk(10);
      // A limit that can drop history (none is dropped here: the checker needs the entries).
      await limitStream(admin, stream, 1_000_000);
      for (const name of ["writer", "follower"] as const) {
        await until(() => (events[name]!.includes("STREAM_CONFIG") ? true : undefined));
      }
      await limitStream(admin, stream, -1); // the operator takes it back
      await workload.waitForOk(10);
    } finally {
      await workload.stop();
      await admin.close();
    }
    await verify(history, replicas);
  });

  it("the stream-update advisory tells replicas at once, their periodic check 10 minutes away (shared layout too)", async () => {
    const own = uniqueStream("ADVISED");
    const shared = uniqueStream("ADVISEDS");
    const events: Record<string, StateSyncError[]> = { own: [], a: [], b: [] };
    const open = (name: "own" | "a" | "b") =>
      openLedger({
        servers: ctx.server.url,
        ...(name === "own" ? { stream: own } : { stream: shared, key: `tenant.${name}` }),
        clientId: name,
        streamCheckIntervalMs: TEN_MINUTES,
        onError: (e) => events[name]!.push(e),
      });
    const replicas = [await open("own"), await open("a"), await open("b")];
    closeAtEnd(...replicas);
    const admin = await tcp(ctx.server.url);
    try {
      await limitStream(admin, own);
      await limitStream(admin, shared);
    } finally {
      await admin.close();
    }
    // Each replica checked once after connecting; the next periodic check is at least 67
    // minutes away (10 min x 10 with the advisory, jittered): only the advisory can tell them.
    for (const name of ["own", "a", "b"] as const) {
      await until(() => (events[name]!.length > 0 ? true : undefined), 10_000);
      expect(codes(events[name]!)).toEqual(["STREAM_CONFIG"]);
      expect(events[name]![0]!.message).toMatch(/max_msgs/);
    }
    for (const r of replicas) expect(r.status).toBe("live");
  });
});

/**
 * The configurations of docs/permissions.md: with the documented permissions the advisory
 * reaches readers and writers; a user whose permissions leave the advisory subject out (the
 * documented writer without it) is refused the subscription and falls back to the periodic
 * check, and nothing reports an error but the STREAM_CONFIG itself.
 */
describe("the advisory and permissions (docs/permissions.md)", () => {
  const configs = documentedConfigs();
  // The advisory subject's line (or list item) left out of every user's subscribe permissions.
  const withoutAdvisory = configs["own-stream"]!.replace(
    /,?\s*"\$JS\.EVENT\.ADVISORY\.STREAM\.UPDATED\.FLAGS"/g,
    "",
  );
  let allowed: NatsServer;
  let denied: NatsServer;
  let operators: NatsConnection[] = [];
  beforeAll(async () => {
    expect(withoutAdvisory).not.toBe(configs["own-stream"]);
    allowed = await startNatsServer({ extraConfig: configs["own-stream"] });
    denied = await startNatsServer({ extraConfig: withoutAdvisory });
    operators = [await tcpAs(allowed.url, "operator"), await tcpAs(denied.url, "operator")];
    for (const nc of operators) {
      await (await JetStreamLog.open({ connection: nc, stream: "FLAGS" })).close();
    }
  });
  beforeEach(async () => {
    // Each test starts on a FLAGS without limits (an earlier test may have set one).
    for (const nc of operators) await limitStream(nc, "FLAGS", -1);
  });
  afterAll(async () => {
    for (const nc of operators) await nc.close().catch(() => undefined);
    await Promise.all([allowed?.stop(), denied?.stop()]);
  });

  const open = (
    url: string,
    user: string,
    streamCheckIntervalMs: number,
    errors: StateSyncError[],
  ) =>
    openLedger({
      servers: url,
      connectOptions: credentials(user),
      stream: "FLAGS",
      create: false,
      streamCheckIntervalMs,
      onError: (e) => errors.push(e),
    });

  it("documented reader and writer hear the advisory (periodic check 10 minutes away)", async () => {
    const readerErrors: StateSyncError[] = [];
    const writerErrors: StateSyncError[] = [];
    // (the writer first: it writes the genesis entry, which a reader may not)
    const writer = await open(allowed.url, "flags-writer", TEN_MINUTES, writerErrors);
    const reader = await open(allowed.url, "flags-reader", TEN_MINUTES, readerErrors);
    closeAtEnd(reader, writer);
    await writer.update("increment", { opId: "w1", by: 1 });
    await limitStream(operators[0]!, "FLAGS");
    for (const errors of [readerErrors, writerErrors]) {
      await until(() => (errors.length > 0 ? true : undefined), 10_000);
      expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    }
  });

  describe.each(CLIENT_LINES)("JetStreamLog.watchConfig over nats.js $name", (line) => {
    it("allowed: onChange on the operator's edit; denied: onUnavailable (PERMISSION_DENIED) once", async () => {
      const seen: Record<"allowed" | "denied", string[]> = { allowed: [], denied: [] };
      const logs: JetStreamLog[] = [];
      const conns = [];
      try {
        for (const [name, server] of [
          ["allowed", allowed],
          ["denied", denied],
        ] as const) {
          const nc = await line.tcp(server.url, credentials("flags-writer"));
          conns.push(nc);
          const log = new JetStreamLog({
            connection: nc,
            stream: "FLAGS",
            create: false,
            ...line.logOptions,
          });
          logs.push(log);
          log.watchConfig({
            onChange: () => seen[name].push("change"),
            onUnavailable: (e) => seen[name].push(`unavailable ${(e as StateSyncError).code}`),
          });
          await log.info(); // a round trip after the subscription: the server has it now
        }
        await until(() => (seen.denied.length > 0 ? true : undefined));
        await limitStream(operators[0]!, "FLAGS");
        await until(() => (seen.allowed.length > 0 ? true : undefined));
        expect(seen).toEqual({ allowed: ["change"], denied: ["unavailable PERMISSION_DENIED"] });
      } finally {
        for (const log of logs) await log.close();
        for (const nc of conns) await nc.close();
      }
    });
  });

  it("a writer denied the advisory subject still reports the edit, through the periodic check, and nothing else", async () => {
    const errors: StateSyncError[] = [];
    const writer = await open(denied.url, "flags-writer", 1_000, errors);
    closeAtEnd(writer);
    await writer.update("increment", { opId: "w1", by: 1 });
    await limitStream(operators[1]!, "FLAGS");
    // Polling at ~1 s: well inside 5 s (with the advisory relied on it would be 6.7 s or more).
    await until(() => (errors.length > 0 ? true : undefined), 5_000);
    expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    expect(writer.status).toBe("live");
  });
});
