import { z } from "zod/v4";
import { defineModel, openSynchronizer, type StateSyncError } from "@statesync/node";
import { afterEach, describe, expect, it } from "vitest";
import { codeOf, tcp, uniqueStream, useNatsServer } from "./helpers.js";

const counter = defineModel({
  name: "foreign-intents",
  state: z.object({ count: z.number().int() }),
  initial: { count: 0 },
  commands: {
    increment: {
      args: z.object({ by: z.number().int() }),
      apply(d, { by }) {
        d.count += by;
      },
    },
  },
});

/** What `p` came to: "ok", its error's code, or "late" when it has not settled within 10 s. */
const outcome = (p: Promise<unknown>) =>
  Promise.race([
    codeOf(p).then((code) => code ?? "ok"),
    new Promise<string>((r) => setTimeout(() => r("late"), 10_000)),
  ]);

/**
 * A fresh-eyes trial: another program with publish permission appends an intent entry every
 * 0.9 s (here every 0.1 s) and nothing else. Before, every writer of the state waited as long
 * as it went on, `signal` and `outcomeTimeoutMs` did not end the wait, and `close()` rejected
 * the held updates UNAVAILABLE or UNKNOWN_OUTCOME. Outcomes only.
 */
describe("intent entries another program publishes (real nats-server)", () => {
  const ctx = useNatsServer();
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  /** A replica of a new stream, and a program publishing intents on its subject from now on. */
  async function held(contention: "retry" | "turns") {
    const stream = uniqueStream("INTENTS");
    const a = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: counter,
      snapshots: false,
      clientId: "honest",
      contention,
    });
    const nc = await tcp(ctx.server.url);
    const js = nc.jetstream();
    let i = 0;
    const publish = async () => {
      const intent = { v: 1, kind: "intent", ts: Date.now(), client: "evil" };
      const data = new TextEncoder().encode(JSON.stringify(intent));
      const ack = await js.publish(`${stream}.log`, data, {
        msgID: `intent-${i++}`,
      });
      return ack.seq;
    };
    await a.waitFor(await publish());
    const timer = setInterval(() => void publish().catch(() => undefined), 100);
    cleanup.push(async () => {
      clearInterval(timer);
      await nc.close();
      if (a.status !== "closed") await a.close();
    });
    return { a, stream };
  }

  /** The kinds and writers of the stream's entries other than intents. */
  async function entries(stream: string): Promise<string[]> {
    const reader = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: counter,
      snapshots: false,
      live: false,
    });
    const history = await reader.history();
    await reader.close();
    return history.filter((h) => h.kind !== "intent").map((h) => `${h.kind}:${h.clientId}`);
  }

  for (const contention of ["retry", "turns"] as const) {
    it(`every kind of update commits while they keep coming (${contention})`, async () => {
      const { a } = await held(contention);
      const outcomes = await Promise.all([
        outcome(a.update("increment", { by: 1 })),
        outcome(a.update((d) => void (d.count += 10))),
        outcome(a.updateUnconditionally("increment", { by: 100 })),
      ]);
      expect(outcomes).toEqual(["ok", "ok", "ok"]);
      expect(a.state.count).toBe(111);
    });
  }

  it("signal and outcomeTimeoutMs end a held update: ABORTED, UNAVAILABLE; nothing appended", async () => {
    const { a, stream } = await held("retry");
    const aborted = a.update("increment", { by: 1 }, { signal: AbortSignal.timeout(50) });
    const timedOut = a.updateUnconditionally("increment", { by: 1 }, { outcomeTimeoutMs: 50 });
    expect(await Promise.all([outcome(aborted), outcome(timedOut)])).toEqual([
      "ABORTED",
      "UNAVAILABLE",
    ]);
    expect(((await timedOut.catch((e: unknown) => e)) as StateSyncError).details.notSent).toBe(
      true,
    );
    await a.close();
    expect(await entries(stream)).toEqual(["genesis:honest"]);
  });

  it("close() rejects held updates CLOSED; nothing appended", async () => {
    const { a, stream } = await held("turns");
    const updates = [
      a.update("increment", { by: 1 }),
      a.update((d) => void (d.count += 10)),
      a.updateUnconditionally("increment", { by: 100 }),
    ].map(outcome);
    await new Promise((r) => setTimeout(r, 20)); // all three are held now
    await a.close();
    expect(await Promise.all(updates)).toEqual(["CLOSED", "CLOSED", "CLOSED"]);
    expect(await entries(stream)).toEqual(["genesis:honest"]);
  });
});
