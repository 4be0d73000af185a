import {
  MemoryLog,
  StateSyncError,
  type LogEntry,
  type LogInfo,
  type StateSyncErrorCode,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open, until } from "./fixtures.js";

/**
 * A log that went back under a live replica (a server that lost acknowledged appends) is found
 * by the reconnection's check, and nothing the rewound log delivers reaches the replica first.
 * Found when nats.js v2 no longer waited 30 s to create an ordered consumer again
 * (adapter-v2.ts): the follower delivered the rewound log's new entries at the revisions the
 * replica held while the check was still asking, the replica applied them, the check then found
 * the entry it had just applied, and the replica stayed `live` on a diverged state.
 */
class SlowInfoLog extends MemoryLog {
  /** While set, `info()` answers only once it resolves (a check that takes a while). */
  gate: Promise<void> | undefined;
  override async info(): Promise<LogInfo> {
    if (this.gate) await this.gate;
    return super.info();
  }
}

/** A log whose point reads (`info`, `entryAt`) fail with `failing` while it is set. */
class UnansweringLog extends MemoryLog {
  failing: StateSyncErrorCode | undefined;
  asked = 0;
  override async info(): Promise<LogInfo> {
    this.fail();
    return super.info();
  }
  override async entryAt(revision: number): Promise<LogEntry | undefined> {
    this.fail();
    return super.entryAt(revision);
  }
  private fail(): void {
    if (this.failing === undefined) return;
    this.asked += 1;
    throw new StateSyncError(this.failing, `injected: point reads fail (${this.failing})`);
  }
}

describe("a log that went back, its entries arriving before the check answers", () => {
  // A handover of the tabs' lead keeps the status `online` (TabLog) and says `online` again once
  // the new leader's connection is made (`renewConnection`): the check must run all the same.
  it.each([
    ["after an outage", "outage"],
    ["after a connection replaced without an outage (a tabs' handover)", "renewed"],
  ] as const)("stalls LOG_REPLACED and keeps the last state it had, %s", async (_, how) => {
    const log = new SlowInfoLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    const backup = log.info().then((i) => i.latestRevision);
    for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
    await a.synced();
    expect(a.state.count).toBe(7);
    const revision = a.revision;

    if (how === "outage") log.setOffline(true);
    log.rewindTo(await backup);
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve));
    if (how === "outage") log.setOffline(false);
    else log.renewConnection();
    // Another replica writes on the rewound log past a's revision while a's check waits.
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 6; i++) await b.update("increment", { by: 10 });
    await b.close();
    await new Promise((r) => setTimeout(r, 20)); // a's follower has had them
    expect(a.state.count).toBe(7); // held back until the check answers
    answer();
    await until(() => a.status === "stalled");
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect(a.stallReason?.details).toMatchObject({ rewound: true, revision });
    expect(a.state.count).toBe(7);
    expect(a.revision).toBe(revision);
    await a.close();
  });

  it("goes on live after a connection replaced without an outage on a log that held", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    await a.update("increment", { by: 1 });
    const seen: string[] = [];
    a.on("status", (s) => seen.push(s));
    log.renewConnection();
    await a.update("increment", { by: 1 });
    await a.synced();
    expect([a.status, a.state.count, seen]).toEqual(["live", 2, []]);
    await a.close();
  });

  it("applies what arrived meanwhile, in order, when the log held its position", async () => {
    const log = new SlowInfoLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    log.setOffline(true);
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve));
    log.setOffline(false);
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 4; i++) await b.update("increment", { by: 10 });
    await new Promise((r) => setTimeout(r, 20));
    expect(a.state.count).toBe(3);
    answer();
    log.gate = undefined;
    await until(() => a.revision === b.revision);
    expect(a.state.count).toBe(43);
    expect(a.status).toBe("live");
    await a.update("increment", { by: 1 });
    expect(a.state.count).toBe(44);
    await Promise.all([a.close(), b.close()]);
  });

  it("sends no conditional update onto the log before the check answers", async () => {
    // The rewound log is at the replica's revision again, with other entries: an append
    // conditional on that revision would be accepted, on a base the log no longer holds
    // (before: the update was appended, and its patches applied to another state by everyone).
    const log = new SlowInfoLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    const backup = (await log.info()).latestRevision;
    for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
    const revision = a.revision;
    log.setOffline(true);
    log.rewindTo(backup);
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve));
    log.setOffline(false);
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 4; i++) await b.update("increment", { by: 10 });
    expect(b.revision).toBe(revision);
    await b.close();
    const update = a.update("increment", { by: 100 });
    update.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 30));
    expect((await log.handle().info()).latestRevision).toBe(revision); // nothing sent yet
    answer();
    await expect(update).rejects.toMatchObject({ code: "LOG_REPLACED" });
    expect((await log.handle().info()).latestRevision).toBe(revision);
    expect(a.state.count).toBe(7);
    await a.close();
  });
});

describe("unconditional commands and a log that went back (fresh-eyes trial, stop 25)", () => {
  // The trial: a command whose first send's outcome was unknown was re-sent after its replica
  // had stalled LOG_REPLACED; it landed on the rewound log (on a history without 7 of the
  // entries the replica had applied) and its caller's promise resolved with that revision.
  async function rewound() {
    const log = new SlowInfoLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    const backup = (await log.info()).latestRevision;
    for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
    return { log, a, backup, revision: a.revision };
  }

  it("sends no unconditional command onto the log before the check answers", async () => {
    const { log, a, backup } = await rewound();
    log.setOffline(true);
    log.rewindTo(backup);
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve));
    log.setOffline(false);
    const command = a.updateUnconditionally("push", { item: "late" });
    command.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 30));
    answer();
    await expect(command).rejects.toMatchObject({ code: "LOG_REPLACED" });
    expect((await log.handle().info()).latestRevision).toBe(backup); // nothing appended
    expect(a.state.items).toEqual([]);
    await a.close();
  });

  it("a command made while the server was down is not sent onto the log that went back", async () => {
    const { log, a, backup } = await rewound();
    log.setOffline(true);
    const command = a.updateUnconditionally("push", { item: "while-down" });
    command.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100)); // its sends fail, nothing sent: tried again
    log.rewindTo(backup); // the server comes back on an older copy of its store
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve)); // the check takes a while
    log.setOffline(false);
    await new Promise((r) => setTimeout(r, 300)); // before: sent meanwhile, at backup + 1
    expect((await log.handle().info()).latestRevision).toBe(backup); // nothing sent yet
    answer();
    await expect(command).rejects.toMatchObject({ code: "LOG_REPLACED" }); // before: resolved
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect((await log.handle().info()).latestRevision).toBe(backup); // nothing appended
    await a.close();
  });
});

describe("a reconnection check the log cannot answer", () => {
  for (const code of ["UNAVAILABLE", "PERMISSION_DENIED"] as const) {
    it(`holds the entries, stays offline and asks again (${code})`, async () => {
      const log = new UnansweringLog();
      const a = await open(log, { compaction: false });
      const errors: StateSyncError[] = [];
      a.on("error", (e) => errors.push(e));
      for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
      const backup = (await log.info()).latestRevision;
      for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
      const revision = a.revision;
      log.setOffline(true);
      log.rewindTo(backup);
      log.failing = code;
      log.setOffline(false);
      const b = await open(log.handle(), { compaction: false });
      for (let i = 0; i < 6; i++) await b.update("increment", { by: 10 });
      await b.close();
      // Asked at least twice: the first failure was not taken as an answer.
      await until(() => log.asked >= 2, 5_000);
      // Before: the failed check released the entries, and the replica went on, live, on the
      // rewound log (count 67).
      expect(a.state.count).toBe(7);
      expect(a.status).toBe("offline");
      const reported = errors.filter((e) => e.code === code);
      expect(reported.length).toBe(1); // once, not at every attempt
      expect(reported[0]!.message).toContain(`revision ${revision}`);
      log.failing = undefined;
      await until(() => a.status === "stalled", 5_000);
      expect(a.stallReason?.code).toBe("LOG_REPLACED");
      expect(a.state.count).toBe(7);
      expect(a.revision).toBe(revision);
      await a.close();
    });
  }

  it("goes live and applies what arrived once the log answers, when it held its position", async () => {
    const log = new UnansweringLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    log.setOffline(true);
    log.failing = "UNAVAILABLE";
    log.setOffline(false);
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 4; i++) await b.update("increment", { by: 10 });
    await until(() => log.asked >= 2, 5_000);
    expect(a.state.count).toBe(3);
    log.failing = undefined;
    await until(() => a.status === "live" && a.revision === b.revision, 5_000);
    expect(a.state.count).toBe(43);
    await a.update("increment", { by: 1 });
    expect(a.state.count).toBe(44);
    await Promise.all([a.close(), b.close()]);
  });
});
