import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "nats";
import {
  JetStreamLog,
  openJetStreamSynchronizer,
  startNatsServer,
  type NatsServer,
} from "@statesync/node";
import { codeOf } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { ledger } from "../support/models.js";
import { credentials, documentedConfigs, tcpAs, wsAs } from "../support/permissions.js";
import { openLedger, sleep, verify } from "../support/workload.js";

/**
 * nats-server runs with the configurations of docs/permissions.md, verbatim. Readers follow but
 * cannot write; tenants of a shared stream work with the documented minimal permissions and
 * cannot read or write each other's states, however they try; a connection without credentials
 * is refused.
 */
const configs = documentedConfigs();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/** A replica of `where` as a documented `user` over TCP. */
function ledgerAs(url: string, user: string, where: { stream: string; key?: string }) {
  return openLedger({ servers: url, connectOptions: credentials(user), ...where });
}

/** A replica of `where` as a documented `user` over WebSocket (nats.ws). */
async function ledgerOverWebSocket(
  url: string,
  user: string,
  where: { stream: string; key?: string },
): Promise<LedgerSync> {
  const nc = await wsAs(url, user);
  return (await openJetStreamSynchronizer({
    connection: nc,
    closeConnection: () => nc.close(),
    model: ledger,
    snapshots: false,
    compaction: false,
    ...where,
  })) as LedgerSync;
}

/** Resolves to the error code of a rejected nats.js call (or "resolved"). */
async function natsCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "resolved";
  } catch (e) {
    return String((e as { code?: unknown }).code ?? e);
  }
}

describe("docs/permissions.md", () => {
  it("holds the two documented configurations", () => {
    expect(Object.keys(configs).sort()).toEqual(["own-stream", "shared-stream"]);
  });
});

describe("a state that owns its stream (config own-stream)", () => {
  let server: NatsServer;
  let operator: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: configs["own-stream"] });
    closers.push(() => server.stop());
    operator = await tcpAs(server.url, "operator");
    closers.push(() => operator.close());
  });
  const lastSeq = async () =>
    (await (await operator.jetstreamManager()).streams.info("FLAGS")).state.last_seq;

  it("a reader follows FLAGS (TCP and WebSocket); every update fails PERMISSION_DENIED and nothing is appended", async () => {
    const owner = await ledgerAs(server.url, "operator", { stream: "FLAGS" });
    await owner.update("increment", { by: 1, opId: "o1" });
    const reader = await ledgerAs(server.url, "flags-reader", { stream: "FLAGS" });
    const wsReader = await ledgerOverWebSocket(server.wsUrl, "flags-reader", { stream: "FLAGS" });
    try {
      for (const r of [reader, wsReader]) expect(r.state.count).toBe(1);
      const before = await lastSeq();
      for (const r of [reader, wsReader]) {
        expect(await codeOf(r.update("increment", { by: 1, opId: "r1" }))).toBe(
          "PERMISSION_DENIED",
        );
        expect(await codeOf(r.updateUnconditionally("note", { text: "r" }))).toBe(
          "PERMISSION_DENIED",
        );
        expect(await codeOf(r.compact())).toBe("PERMISSION_DENIED");
      }
      const raw = await tcpAs(server.url, "flags-reader");
      expect(await natsCode(raw.jetstream().publish("FLAGS.log", new Uint8Array([1])))).toBe(
        "PERMISSIONS_VIOLATION",
      );
      await raw.close();
      expect(await lastSeq()).toBe(before);
      // ...and they keep following.
      const { revision } = await owner.update("increment", { by: 1, opId: "o2" });
      await Promise.all([reader.waitFor(revision), wsReader.waitFor(revision)]);
      for (const r of [reader, wsReader]) {
        expect(r.state.ops).toEqual(["o1", "o2"]);
        expect(r.status).toBe("live");
      }
    } finally {
      await Promise.all([owner.close(), reader.close(), wsReader.close()]);
    }
  });

  it("a writer appends and compacts; readers follow across the compaction", async () => {
    // A fresh FLAGS (the operator's job: writers may not create streams).
    await (await operator.jetstreamManager()).streams.delete("FLAGS");
    await (await JetStreamLog.open({ connection: operator, stream: "FLAGS" })).close();
    const writer = await ledgerAs(server.url, "flags-writer", { stream: "FLAGS" });
    const reader = await ledgerAs(server.url, "flags-reader", { stream: "FLAGS" });
    const history = new History();
    history.watch("w", writer);
    history.watch("r", reader);
    try {
      for (let i = 0; i < 5; i++)
        await history.increment(writer, "w", i % 2 ? "conditional" : "unconditional");
      const { revision } = await writer.compact();
      expect((await writer.history())[0]).toMatchObject({ revision, kind: "snapshot" });
      await history.increment(writer, "w", "conditional");
      // The log was compacted: check applied state and observations, not the log.
      const verdict = await verify(history, { w: writer, r: reader }, { withLog: false });
      expect(verdict.stats.ok).toBe(6);
      const late = await ledgerAs(server.url, "flags-reader", { stream: "FLAGS" });
      expect(late.state).toEqual(reader.state);
      await late.close();
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  });

  it("refuses a connection without credentials, or with a wrong password (TCP and WebSocket)", async () => {
    expect(await natsCode(connect({ servers: server.url }))).toBe("AUTHORIZATION_VIOLATION");
    expect(
      await natsCode(connect({ servers: server.url, user: "flags-reader", pass: "guess" })),
    ).toBe("AUTHORIZATION_VIOLATION");
    expect(await natsCode(wsAs(server.wsUrl, undefined))).toBe("AUTHORIZATION_VIOLATION");
    expect(await codeOf(openLedger({ servers: server.url, stream: "FLAGS" }))).toBe(
      "PERMISSION_DENIED",
    );
    expect(
      await codeOf(
        openLedger({
          servers: server.url,
          stream: "FLAGS",
          connectOptions: { user: "flags-writer", pass: "nope" },
        }),
      ),
    ).toBe("PERMISSION_DENIED");
  });

  // A new user's trial: the documented reader opened without `inboxPrefix` was refused with the
  // server's words only ("Permissions Violation for Subscription to \"_INBOX.…\""), not what to do.
  it("tells a user who may subscribe only on its own inbox prefix to set inboxPrefix", async () => {
    const { inboxPrefix: _omitted, ...withoutInbox } = credentials("flags-reader");
    const error = await openLedger({
      servers: server.url,
      stream: "FLAGS",
      connectOptions: withoutInbox,
    }).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error?.code).toBe("PERMISSION_DENIED");
    expect(error?.message).toMatch(/set connectOptions\.inboxPrefix/);
  });

  it("readers follow FLAGS through fan-out with the documented subscribe permission", async () => {
    // The operator (re)creates FLAGS with fan-out: its entries are republished.
    await (await operator.jetstreamManager()).streams.delete("FLAGS");
    const owner = await JetStreamLog.open({ connection: operator, stream: "FLAGS", fanout: true });
    await owner.appendUnconditional(new Uint8Array([0]), "before");
    const got = await followAs(server.url, "flags-reader", { stream: "FLAGS" }, async () => {
      for (let i = 1; i <= 3; i++) await owner.appendUnconditional(new Uint8Array([i]), `e${i}`);
    });
    expect(got).toEqual(["before", "e1", "e2", "e3"]);
    await owner.close();
  });
});

describe("tenants of a shared stream (config shared-stream)", () => {
  const A = { stream: "BOARDS", key: "tenant-a.board-1" };
  const B = { stream: "BOARDS", key: "tenant-b.board-1" };
  const A_SUBJECT = "BOARDS.tenant-a.board-1";
  let server: NatsServer;
  let operator: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: configs["shared-stream"] });
    closers.push(() => server.stop());
    operator = await tcpAs(server.url, "operator");
    closers.push(() => operator.close());
    // The operator creates the shared stream (tenants may not), with fan-out.
    await (await JetStreamLog.open({ connection: operator, ...A, fanout: true })).close();
  });
  const lastOnA = async () => {
    const jsm = await operator.jetstreamManager();
    return (
      (await jsm.streams.getMessage("BOARDS", { last_by_subj: A_SUBJECT }).catch(() => undefined))
        ?.seq ?? 0
    );
  };

  /** Messages on tenant-a's subject (stream info with a subjects filter, as the operator). */
  const countOnA = async () => {
    const reply = await operator.request(
      "$JS.API.STREAM.INFO.BOARDS",
      new TextEncoder().encode(JSON.stringify({ subjects_filter: A_SUBJECT })),
    );
    return (JSON.parse(new TextDecoder().decode(reply.data)).state.subjects?.[A_SUBJECT] ??
      0) as number;
  };

  it("tenant-a writes over WebSocket and reads over TCP with the documented minimal permissions", async () => {
    const writer = await ledgerOverWebSocket(server.wsUrl, "tenant-a-writer", A);
    const reader = await ledgerAs(server.url, "tenant-a-reader", A);
    const history = new History();
    history.watch("w", writer);
    history.watch("r", reader);
    try {
      for (let i = 0; i < 6; i++) {
        await history.increment(writer, "w", i % 3 === 2 ? "unconditional" : "conditional");
      }
      const before = await lastOnA();
      expect(await codeOf(reader.update("increment", { by: 1, opId: "x" }))).toBe(
        "PERMISSION_DENIED",
      );
      expect(await lastOnA()).toBe(before);
      // Purge would reach every tenant's subjects: compaction is the operator's, not a tenant's.
      expect(await codeOf(writer.compact())).toBe("PERMISSION_DENIED");
      const verdict = await verify(history, { w: writer, r: reader });
      expect(verdict.stats.ok).toBe(6);
      expect((await reader.history()).length).toBeGreaterThanOrEqual(7);
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  });

  it("tenant-b can neither read nor write tenant-a's state, whichever way it tries", async () => {
    const a = await ledgerAs(server.url, "tenant-a-writer", A);
    await a.update("note", { text: "tenant-a-secret-note" });
    const b = await ledgerAs(server.url, "tenant-b-writer", B);
    await b.update("note", { text: "b's own" });
    const count = await countOnA();
    const nc = await tcpAs(server.url, "tenant-b-writer");
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    const js = nc.jetstream();
    const json = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
    const denied = "PERMISSIONS_VIOLATION";
    try {
      // Opening tenant-a's state as tenant-b.
      expect(await codeOf(ledgerAs(server.url, "tenant-b-writer", A))).toBe("PERMISSION_DENIED");
      // Reads by sequence or by subject, through every API that does them.
      expect(await natsCode(jsm.streams.getMessage("BOARDS", { seq: 1 }))).toBe(denied);
      expect(await natsCode(jsm.streams.getMessage("BOARDS", { last_by_subj: A_SUBJECT }))).toBe(
        denied,
      );
      expect(await natsCode(nc.request("$JS.API.DIRECT.GET.BOARDS", json({ seq: 1 })))).toBe(
        denied,
      );
      expect(await natsCode(nc.request(`$JS.API.DIRECT.GET.BOARDS.${A_SUBJECT}`))).toBe(denied);
      // Consumers with tenant-a's filter, a wider one, none, or a durable.
      const consumer = { ack_policy: "none", deliver_policy: "all" } as const;
      for (const cfg of [
        { name: "snoop1", filter_subject: A_SUBJECT },
        { name: "snoop2", filter_subject: "BOARDS.>" },
        { name: "snoop3", filter_subject: "BOARDS.tenant-a.>" },
        { durable_name: "snoop4", filter_subject: A_SUBJECT },
        {},
      ]) {
        expect(await natsCode(jsm.consumers.add("BOARDS", { ...consumer, ...cfg } as never))).toBe(
          denied,
        );
      }
      // A create on its own (permitted) subject whose body asks for tenant-a's filter, or none.
      for (const config of [
        { name: "snoop5", filter_subject: A_SUBJECT, ...consumer },
        { name: "snoop5", ...consumer },
      ]) {
        const reply = await nc.request(
          "$JS.API.CONSUMER.CREATE.BOARDS.snoop5.BOARDS.tenant-b.x",
          json({ stream_name: "BOARDS", config }),
        );
        const answer = JSON.parse(new TextDecoder().decode(reply.data));
        expect(answer.error?.err_code).toBe(10131);
      }
      // Listing consumers (to find tenant-a's names), purging, deleting, appending.
      expect(await natsCode(nc.request("$JS.API.CONSUMER.LIST.BOARDS", json({})))).toBe(denied);
      expect(await natsCode(nc.request("$JS.API.CONSUMER.NAMES.BOARDS", json({})))).toBe(denied);
      expect(await natsCode(jsm.streams.purge("BOARDS", { filter: A_SUBJECT }))).toBe(denied);
      expect(await natsCode(jsm.streams.deleteMessage("BOARDS", 1))).toBe(denied);
      expect(await natsCode(js.publish(A_SUBJECT, json({ v: 1 })))).toBe(denied);
      // Subscribing to tenant-a's inbox, its subjects, or everything.
      const received: string[] = [];
      const subs = [
        "_INBOX_tenant-a-writer.>",
        "BOARDS.tenant-a.>",
        "BOARDS.>",
        "statesync.live.BOARDS.tenant-a.>",
        "statesync.live.>",
        ">",
      ].map((s) =>
        nc.subscribe(s, { callback: (e, m) => void (e ? undefined : received.push(m.subject)) }),
      );
      await nc.flush();
      await sleep(200);
      await a.update("note", { text: "written while tenant-b listens" });
      await a.history();
      await sleep(200);
      for (const s of subs) expect(s.isClosed()).toBe(true);
      expect(received).toEqual([]);
      // Nothing of tenant-b's attempts reached tenant-a's subject; tenant-a never saw tenant-b.
      expect(await countOnA()).toBe(count + 1);
      expect(a.state.notes).toEqual(["tenant-a-secret-note", "written while tenant-b listens"]);
      expect(b.state.notes).toEqual(["b's own"]);
      // The documented limit: stream info names the subjects in use and counts, never data.
      const info = await nc.request("$JS.API.STREAM.INFO.BOARDS", json({ subjects_filter: ">" }));
      const text = new TextDecoder().decode(info.data);
      expect(JSON.parse(text).state.subjects).toHaveProperty(A_SUBJECT);
      expect(text).not.toContain("tenant-a-secret-note");
      expect(nc.isClosed()).toBe(false);
    } finally {
      await nc.close();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("tenant-a follows its state through fan-out (no direct get: gaps through its consumers)", async () => {
    const wnc = await tcpAs(server.url, "tenant-a-writer");
    closers.push(() => wnc.close());
    const writer = await JetStreamLog.open({ connection: wnc, ...A, create: false });
    const before = await writer.appendUnconditional(new Uint8Array([0]), "before");
    const got = await followAs(
      server.url,
      "tenant-a-reader",
      A,
      async () => {
        for (let i = 1; i <= 3; i++) await writer.appendUnconditional(new Uint8Array([i]), `e${i}`);
      },
      before.revision,
    );
    expect(got).toEqual(["before", "e1", "e2", "e3"]);
    await writer.close();
  });
});

/**
 * Follows `where` as `user` with fan-out from `from` (default 1), runs `write`, and answers the
 * message ids delivered once the last one written arrived; fails when the follower reports an
 * error or does not follow through the republished subject.
 */
async function followAs(
  url: string,
  user: string,
  where: { stream: string; key?: string },
  write: () => Promise<void>,
  from = 1,
): Promise<Array<string | undefined>> {
  const nc = await tcpAs(url, user);
  const log = await JetStreamLog.open({ connection: nc, ...where, create: false, fanout: true });
  const got: Array<string | undefined> = [];
  const errors: unknown[] = [];
  const follower = log.follow(from, {
    onEntry: (e) => got.push(e.messageId),
    onError: (e) => errors.push(e),
  });
  try {
    for (let i = 0; i < 200 && log.liveVia === undefined; i++) await sleep(25);
    expect(log.liveVia).toBe("republish");
    await write();
    for (let i = 0; i < 400 && got.at(-1) !== "e3" && errors.length === 0; i++) await sleep(25);
    expect(errors).toEqual([]);
    return got;
  } finally {
    await follower.stop();
    await log.close();
    await nc.close();
  }
}
