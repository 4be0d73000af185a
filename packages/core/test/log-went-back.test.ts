import { MemoryLog, type LogInfo } from "@statesync/core";
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

describe("a log that went back, its entries arriving before the check answers", () => {
  it("stalls LOG_REPLACED and keeps the last state it had", async () => {
    const log = new SlowInfoLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    const backup = log.info().then((i) => i.latestRevision);
    for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
    await a.synced();
    expect(a.state.count).toBe(7);
    const revision = a.revision;

    log.setOffline(true);
    log.rewindTo(await backup);
    let answer: () => void = () => undefined;
    log.gate = new Promise((resolve) => (answer = resolve));
    log.setOffline(false);
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
});
