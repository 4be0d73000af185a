import { MemoryLog, type StateSyncError } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { codeOf, open } from "./fixtures.js";

/**
 * A fresh-eyes trial: a client with publish permission appended one intent entry every 0.9 s
 * and never an update. Every writer of the state then waited as long as the intents kept coming
 * (each renewed the hold), `signal` and `outcomeTimeoutMs` did not end the wait, and `close()`
 * rejected the held updates `UNAVAILABLE` / `UNKNOWN_OUTCOME` instead of `CLOSED`.
 */

const enc = (o: unknown) => JSON.stringify(o);
const intent = (client: string) => enc({ v: 1, kind: "intent", ts: Date.now(), client });
const command = (client: string, by: number) =>
  enc({ v: 1, kind: "command", ts: 1, seed: 1, client, name: "increment", args: { by } });

/** Resolves "late" after `ms`: the loser of a race against a call that should end first. */
const late = (ms: number) => new Promise<"late">((r) => setTimeout(() => r("late"), ms));
/** What `p` came to: "ok", its error's code, or "late" when it has not settled within 5 s. */
const outcome = (p: Promise<unknown>) =>
  Promise.race([codeOf(p).then((code) => code ?? "ok"), late(5_000)]);

const stops: Array<() => void> = [];
afterEach(() => stops.splice(0).forEach((stop) => stop()));

/** Appends an intent of `client(i)` now and every `everyMs`; resolves with the first's revision. */
function spam(log: MemoryLog, client: (i: number) => string, everyMs = 100): number {
  let i = 0;
  const first = log.injectRaw(intent(client(i++)));
  const timer = setInterval(() => log.injectRaw(intent(client(i++))), everyMs);
  stops.push(() => clearInterval(timer));
  return first;
}

/** The clients of the entries in `log` other than intents (read by a replica opened now). */
async function writers(log: MemoryLog): Promise<string[]> {
  const reader = await open(log, { clientId: "reader", compaction: false });
  const kinds = (await reader.history()).filter((h) => h.kind !== "intent");
  await reader.close();
  return kinds.map((h) => `${h.kind}:${h.clientId}`);
}

describe("intents of another client hold a writer back for a bounded time", () => {
  for (const contention of ["retry", "turns"] as const) {
    it(`every kind of update commits while a client appends intents without end (${contention})`, async () => {
      const log = new MemoryLog();
      const a = await open(log, { clientId: "a", compaction: false, contention });
      await a.waitFor(spam(log, () => "evil"));
      const outcomes = await Promise.all([
        outcome(a.update("increment", { by: 1 })),
        outcome(a.update((d) => void (d.count += 10))),
        outcome(a.updateUnconditionally("increment", { by: 100 })),
      ]);
      expect(outcomes).toEqual(["ok", "ok", "ok"]);
      expect(a.state.count).toBe(111);
      await a.close();
    });
  }

  it("intents under ever new client ids hold an update back for a bounded time in all", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(spam(log, (i) => `evil-${i}`));
    expect(await outcome(a.update("increment", { by: 1 }))).toBe("ok");
    expect(await outcome(a.updateUnconditionally("increment", { by: 1 }))).toBe("ok");
    expect(a.state.count).toBe(2);
    await a.close();
  });

  it("a compaction completes while a client appends intents without end", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.update("increment", { by: 3 });
    await a.waitFor(spam(log, () => "evil"));
    expect(await outcome(a.compact())).toBe("ok");
    await a.close();
  });

  it("a client whose intents never lead to an entry is no longer waited for, until it writes", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(spam(log, () => "evil"));
    // Long enough for evil's intents to have held writers back as long as one may.
    await new Promise((r) => setTimeout(r, 3_500));
    // An entry that lands well within the hold an intent imposes: the update must come before it.
    const landing = new Promise<number>((resolve) =>
      setTimeout(() => resolve(log.injectRaw(command("late", 1_000))), 500),
    );
    const ignored = await a.update("increment", { by: 1 });
    expect(ignored.revision).toBeLessThan(await landing);
    // Once evil writes an entry, its intents count again.
    stops.splice(0).forEach((stop) => stop());
    log.injectRaw(command("evil", 10));
    await a.waitFor(log.injectRaw(intent("evil")));
    const again = new Promise<number>((resolve) =>
      setTimeout(() => resolve(log.injectRaw(command("late", 1_000))), 300),
    );
    const held = await a.update("increment", { by: 1 });
    expect(held.revision).toBeGreaterThan(await again);
    expect(a.state.count).toBe(2_012);
    await a.close();
  });
});

describe("signal, outcomeTimeoutMs and close() end a wait behind intents", () => {
  it("an aborted signal rejects a held update ABORTED; nothing was appended", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(spam(log, () => "evil"));
    const signal = () => AbortSignal.timeout(50);
    const outcomes = await Promise.all([
      outcome(a.update("increment", { by: 1 }, { signal: signal() })),
      outcome(a.update((d) => void (d.count += 10), { signal: signal() })),
      outcome(a.updateUnconditionally("increment", { by: 100 }, { signal: signal() })),
    ]);
    expect(outcomes).toEqual(["ABORTED", "ABORTED", "ABORTED"]);
    await a.close();
    expect(await writers(log)).toEqual(["genesis:a"]);
  });

  it("outcomeTimeoutMs rejects a held update UNAVAILABLE, nothing sent", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(spam(log, () => "evil"));
    const updates = [
      a.update("increment", { by: 1 }, { outcomeTimeoutMs: 50 }),
      a.updateUnconditionally("increment", { by: 100 }, { outcomeTimeoutMs: 50 }),
    ];
    expect(await Promise.all(updates.map(outcome))).toEqual(["UNAVAILABLE", "UNAVAILABLE"]);
    for (const update of updates) {
      const error = (await update.catch((e: unknown) => e)) as StateSyncError;
      expect(error.details.notSent).toBe(true);
      expect(error.message).toMatch(/nothing was appended/);
    }
    await a.close();
    expect(await writers(log)).toEqual(["genesis:a"]);
  });

  it("an update queued behind a held one ends at its own limits, before the held one goes", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(spam(log, () => "evil"));
    const settled: string[] = [];
    const note = (name: string, p: Promise<unknown>) =>
      outcome(p).then((o) => void settled.push(`${name}:${o}`));
    const first = note("held", a.update("increment", { by: 1 }));
    await new Promise((r) => setTimeout(r, 10)); // the next two wait in the queue behind it
    const aborted = note(
      "aborted",
      a.update("increment", { by: 10 }, { signal: AbortSignal.timeout(30) }),
    );
    const timedOut = note("timedOut", a.update("increment", { by: 100 }, { outcomeTimeoutMs: 80 }));
    await Promise.all([first, aborted, timedOut]);
    expect(settled).toEqual(["aborted:ABORTED", "timedOut:UNAVAILABLE", "held:ok"]);
    expect(a.state.count).toBe(1);
    await a.close();
  });

  for (const contention of ["retry", "turns"] as const) {
    it(`close() rejects held updates CLOSED; nothing was appended (${contention})`, async () => {
      const log = new MemoryLog();
      const a = await open(log, { clientId: "a", compaction: false, contention });
      await a.waitFor(spam(log, () => "evil"));
      const updates = [
        a.update("increment", { by: 1 }),
        a.update((d) => void (d.count += 10)),
        a.updateUnconditionally("increment", { by: 100 }),
      ].map(outcome);
      await new Promise((r) => setTimeout(r, 20)); // all three are held now
      await a.close();
      expect(await Promise.all(updates)).toEqual(["CLOSED", "CLOSED", "CLOSED"]);
      expect(await writers(log)).toEqual(["genesis:a"]);
    });
  }
});
