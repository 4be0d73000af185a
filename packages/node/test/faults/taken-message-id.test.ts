import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers, type NatsConnection } from "nats";
import {
  openSynchronizer,
  startNatsServer,
  stateHash,
  type NatsServer,
  type StateSynchronizer,
} from "@statesync/node";
import { counter } from "../support/models.js";
import { rejection, tcp, uniqueStream } from "../helpers.js";

/**
 * Message ids are predictable (`<client>-<instance>-<n>`, and `history()` shows them), so a
 * program that may publish on a state's subject can store its own entry under the id a writer
 * sends next: the server drops the writer's append as a duplicate and acknowledges the other
 * entry's revision. Hostile-input trial: the update resolved as committed although only the other
 * entry was stored (lost), and a writer not yet at that revision adopted its own state there
 * while every other replica held the other entry's (diverged, same revision). An id is the
 * writer's only when the entry under it holds its bytes.
 */
let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await tcp(server.url);
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

type Counter = StateSynchronizer<{ count: number; seen: string[] }, any>;

/** Publishes `increment(by)` raw under each of the next `n` message ids `writer` will use. */
async function squatNextIds(
  stream: string,
  writer: Counter,
  n: number,
  by = 100,
  subject = `${stream}.log`,
  idPrefix = "", // a shared stream's ids are `<subject>:<id>`
): Promise<void> {
  const last = (await writer.history()).at(-1)!.messageId!;
  const [, prefix, seq] = /^(.*)-(\d+)$/.exec(last)!;
  for (let i = 1; i <= n; i++) {
    const h = headers();
    h.set("Nats-Msg-Id", `${idPrefix}${prefix}-${Number(seq) + i}`);
    const forged = { v: 1, ts: 1, client: "other", kind: "command", seed: 1, name: "increment" };
    await nc.jetstream().publish(subject, JSON.stringify({ ...forged, args: { by } }), {
      headers: h,
    });
  }
}

async function open(stream: string, live = true): Promise<Counter> {
  return (await openSynchronizer({
    servers: server.url,
    stream,
    model: counter,
    snapshots: false,
    compaction: false,
    live,
  })) as Counter;
}

describe("an entry another program stored under the message id a writer sends next", () => {
  for (const kind of ["conditional", "unconditional"] as const) {
    it(`does not pass for the writer's ${kind} update: it is stored after it, and replicas agree`, async () => {
      const stream = uniqueStream("TAKEN");
      // Not following: the writer is still at the base when the acknowledgement comes.
      const writer = await open(stream, false);
      await writer.update("increment", { by: 1 });
      await squatNextIds(stream, writer, 1);
      const { revision } =
        kind === "conditional"
          ? await writer.update("increment", { by: 1 })
          : await writer.updateUnconditionally("increment", { by: 1 });
      expect(revision).toBe(4); // after the other program's entry at 3
      const late = await open(stream);
      const entry = (await late.history({ from: revision, to: revision }))[0]!;
      expect(entry.clientId).toBe(writer.clientId);
      expect(late.state.count).toBe(102);
      expect(writer.revision).toBe(late.revision);
      expect(stateHash(writer.state)).toBe(stateHash(late.state));
      await Promise.all([writer.close(), late.close()]);
    });
  }

  it("ids taken again and again: typed failures, nothing stored, nothing diverges", async () => {
    const stream = uniqueStream("TAKEN");
    const writer = await open(stream, false);
    await writer.update("increment", { by: 1 });
    await squatNextIds(stream, writer, 40, 0);
    const conditional = await rejection(writer.update("increment", { by: 1 }, { maxAttempts: 3 }));
    expect(conditional.code).toBe("RETRY_LIMIT");
    const unconditional = await rejection(writer.updateUnconditionally("increment", { by: 1 }));
    expect(unconditional.code).toBe("UNAVAILABLE");
    expect(unconditional.details.notSent).toBe(true);
    expect(unconditional.message).toMatch(/message ids in a row .* were taken/);
    const late = await open(stream);
    expect(late.revision).toBe(42);
    expect(late.state.count).toBe(1);
    await writer.fetchUpdates();
    expect(stateHash(writer.state)).toBe(stateHash(late.state));
    await Promise.all([writer.close(), late.close()]);
  });

  // JetStream drops a duplicate message id stream-wide: in a shared stream, an entry published
  // under the id on another key's subject (a tenant that may publish there) took the writer's
  // append, and the point read of that revision, which keeps only this key's subject, found
  // nothing there and trusted the acknowledgement.
  for (const kind of ["conditional", "unconditional"] as const) {
    it(`a shared stream: an id taken on another key's subject does not pass (${kind})`, async () => {
      const stream = uniqueStream("TAKENK");
      const where = { servers: server.url, stream, model: counter, snapshots: false as const };
      const opts = { ...where, compaction: false as const };
      const writer = (await openSynchronizer({ ...opts, key: "k1", live: false })) as Counter;
      await writer.update("increment", { by: 1 });
      await squatNextIds(stream, writer, 1, 100, `${stream}.k2`, `${stream}.k1:`);
      const { revision } =
        kind === "conditional"
          ? await writer.update("increment", { by: 1 })
          : await writer.updateUnconditionally("increment", { by: 1 });
      const late = (await openSynchronizer({ ...opts, key: "k1" })) as Counter;
      const entry = (await late.history({ from: revision, to: revision }))[0];
      expect(entry?.clientId).toBe(writer.clientId);
      expect(late.state.count).toBe(2);
      expect(writer.revision).toBe(late.revision);
      expect(stateHash(writer.state)).toBe(stateHash(late.state));
      await Promise.all([writer.close(), late.close()]);
    });
  }
});
