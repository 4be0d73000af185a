import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  decodeEntry,
  defineModel,
  encodeEntry,
  EntryVerdicts,
  MemoryLog,
  stateHash,
  type Entry,
  type StateSyncError,
} from "@statesync/core";
import { until } from "./fixtures.js";

/**
 * Unconditional commands a replica has in flight together share appends: a `commands` entry
 * (format 4, docs/format.md) whose commands every replica applies in order, each checked as a
 * command entry of its own.
 */
const tally = defineModel({
  name: "tally",
  state: z.object({ n: z.number().nonnegative(), log: z.array(z.number()) }),
  initial: { n: 0, log: [] as number[] },
  commands: {
    add: {
      args: z.object({ by: z.number().int() }),
      apply(d, { by }, ctx) {
        d.n += by;
        d.log.push(ctx.revision);
      },
    },
    addFrom: {
      args: z.object({ from: z.object({ value: z.number().int() }) }),
      apply(d, { from }, ctx) {
        d.n += from.value;
        d.log.push(ctx.revision);
      },
    },
    boom: {
      args: z.object({}),
      apply() {
        throw new Error("boom");
      },
    },
  },
});

async function open(log: MemoryLog, live = true) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model: tally,
    live,
    snapshots: false,
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

async function entries(log: MemoryLog): Promise<Entry[]> {
  const out: Entry[] = [];
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    if (d.ok) out.push(d.entry);
  }
  return out;
}

describe("commands in flight together", () => {
  it("share entries, every caller learns its revision, and replicas converge", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const b = await open(log, false);
    const results = await Promise.all(
      Array.from({ length: 300 }, () => a.updateUnconditionally("add", { by: 1 })),
    );
    expect(a.state.n).toBe(300);
    const written = await entries(log);
    const groups = written.filter((e) => e.kind === "commands");
    expect(groups.length).toBeGreaterThan(0);
    expect(a.stats.appends).toBeLessThan(300);
    const carried = written.reduce(
      (n, e) => n + (e.kind === "command" ? 1 : e.kind === "commands" ? e.commands.length : 0),
      0,
    );
    expect(carried).toBe(300);
    // Each caller's revision is the entry that carried its command.
    const revisions = new Set(results.map((r) => r.revision));
    expect(revisions.size).toBe(a.stats.appends);
    await b.fetchUpdates();
    expect(b.state.n).toBe(300);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    // ctx.revision is the revision before the entry, for each command of it alike.
    expect(a.state.log.every((r) => revisions.has(r + 1))).toBe(true);
    await a.close();
    await b.close();
  });

  it("groupCommands: false sends each alone, as a format-3 command entry (rolling upgrades)", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({
      log: log.handle(),
      model: tally,
      snapshots: false,
      compaction: false,
      groupCommands: false,
    });
    await Promise.all(Array.from({ length: 100 }, () => a.updateUnconditionally("add", { by: 1 })));
    const kinds = new Set((await entries(log)).map((e) => `${e.kind}/${e.v}`));
    expect(kinds).toEqual(new Set(["genesis/1", "command/3"]));
    expect(a.state.n).toBe(100);
    await a.close();
    await expect(
      createSynchronizer({ log: log.handle(), model: tally, groupCommands: "no" as never }),
    ).rejects.toMatchObject({ code: "VALIDATION" });
  });

  it("an awaited command goes alone, as a format-3 command entry", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    for (let i = 0; i < 5; i++) await a.updateUnconditionally("add", { by: 1 });
    const kinds = (await entries(log)).map((e) => `${e.kind}/${e.v}`);
    expect(kinds.filter((k) => k.startsWith("command"))).toEqual(Array(5).fill("command/3"));
    await a.close();
  });

  it("a command that fails in a group fails its caller only, on every replica alike", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const b = await open(log);
    const calls = Array.from({ length: 40 }, (_, i) =>
      i % 7 === 3 ? a.updateUnconditionally("boom", {}) : a.updateUnconditionally("add", { by: 1 }),
    );
    const settled = await Promise.allSettled(calls);
    const failed = settled.flatMap((s, i) => (s.status === "rejected" ? [i] : []));
    expect(failed).toEqual([3, 10, 17, 24, 31, 38]);
    for (const i of failed) {
      const e = (settled[i] as PromiseRejectedResult).reason as StateSyncError;
      expect(e.code).toBe("COMMAND_FAILED");
      expect(e.details.committed).toBe(true);
    }
    expect(a.state.n).toBe(34);
    await b.fetchUpdates();
    expect(b.state.n).toBe(34);
    // Each failure reported once per replica, naming its entry and index.
    const grouped = b.errors.filter((e) => e.code === "COMMAND_FAILED");
    expect(grouped).toHaveLength(6);
    expect((await entries(log)).some((e) => e.kind === "commands")).toBe(true);
    await a.close();
    await b.close();
  });

  it("a group too large for one entry is split, and every command lands once", async () => {
    const log = new MemoryLog({ maxEntryBytes: 2_000 });
    const a = await open(log);
    const big = 200; // each command's entry ~100 bytes: at most ~15 together
    await Promise.all(Array.from({ length: big }, () => a.updateUnconditionally("add", { by: 1 })));
    expect(a.state.n).toBe(big);
    const written = await entries(log);
    expect(written.some((e) => e.kind === "commands")).toBe(true);
    await a.close();
  });

  it("commands waiting for a group are still sent when the replica closes, and close() waits for them", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setAppendDelay(20);
    const calls = Array.from({ length: 50 }, () => a.updateUnconditionally("add", { by: 1 }));
    await new Promise((r) => setTimeout(r, 5)); // 4 appends travel, 46 commands wait
    await a.close();
    const settled = await Promise.allSettled(calls);
    expect(settled.filter((s) => s.status === "fulfilled")).toHaveLength(50);
    log.setAppendDelay(0);
    const c = await open(log, false);
    expect(c.state.n).toBe(50);
    expect((await entries(log)).some((e) => e.kind === "commands")).toBe(true);
    await c.close();
  });
});

describe("a call's arguments", () => {
  it("are those at the call, though the caller changes its object while the call waits for a group", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const by = { value: 0 };
    const calls: Array<Promise<unknown>> = [];
    for (let i = 1; i <= 12; i++) {
      by.value = i; // one object, reused for each call
      calls.push(a.updateUnconditionally("add", { by: by.value }));
      calls.push(a.updateUnconditionally("addFrom", { from: by }));
    }
    by.value = -1_000; // would fail the schema (n below 0) had it been sent as it is now
    await Promise.all(calls);
    expect(a.errors).toEqual([]);
    expect(a.state.n).toBe(2 * 78); // 1 + ... + 12, twice
    expect((await entries(log)).some((e) => e.kind === "commands")).toBe(true);
    await a.close();
  });
});

describe("one call's limits in a group", () => {
  it("a call whose outcomeTimeoutMs ends while its group travels fails alone; the others are stored, once", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setAppendDelay(300);
    const add = (options?: { outcomeTimeoutMs: number }) =>
      a.updateUnconditionally("add", { by: 1 }, options);
    const travelling = Array.from({ length: 4 }, () => add());
    // Waits ~300 ms for a travelling append, then goes with the others; ends ~150 ms into it.
    const short = add({ outcomeTimeoutMs: 450 });
    const others = Array.from({ length: 10 }, () => add());
    const settled = await Promise.allSettled([...travelling, short, ...others]);
    const outcomes = settled.map((s) =>
      s.status === "fulfilled" ? "ok" : (s.reason as StateSyncError).code,
    );
    // Before: the 10 others, with 30 s limits, failed UNKNOWN_OUTCOME with the short one.
    expect(outcomes).toEqual([...Array(4).fill("ok"), "UNKNOWN_OUTCOME", ...Array(10).fill("ok")]);
    const grouped = settled
      .slice(5)
      .map((s) => (s as PromiseFulfilledResult<{ revision: number }>).value);
    expect(new Set(grouped.map((r) => r.revision)).size).toBe(1);
    log.setAppendDelay(0);
    await a.fetchUpdates();
    expect(a.state.n).toBe(15); // the short one's command landed too, in the group's entry, once
    const commands = (await entries(log)).filter((e) => e.kind === "commands");
    expect(commands.map((e) => e.commands.length)).toEqual([11]);
    await a.close();
  });

  it("a call whose outcomeTimeoutMs ends before its group could be sent fails alone, not sent", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setAppendDelay(300);
    const add = (options?: { outcomeTimeoutMs: number }) =>
      a.updateUnconditionally("add", { by: 1 }, options);
    // Refused offline when their delay ends: they end (not sent) at ~350 ms; the group is sent.
    const travelling = Array.from({ length: 4 }, () => add({ outcomeTimeoutMs: 350 }));
    const short = add({ outcomeTimeoutMs: 450 });
    const others = Array.from({ length: 5 }, () => add());
    await new Promise((r) => setTimeout(r, 250));
    log.setOffline(true); // the group finds no log until past the short one's deadline
    setTimeout(() => log.setOffline(false), 400);
    const settled = await Promise.allSettled([...travelling, short, ...others]);
    const outcomes = settled.map((s) =>
      s.status === "fulfilled" ? "ok" : (s.reason as StateSyncError).code,
    );
    // Before: the 5 others, with 30 s limits, failed UNAVAILABLE with the short one.
    expect(outcomes).toEqual([...Array(5).fill("UNAVAILABLE"), ...Array(5).fill("ok")]);
    const e = (settled[4] as PromiseRejectedResult).reason as StateSyncError;
    expect(e.details.notSent).toBe(true);
    log.setAppendDelay(0);
    await a.fetchUpdates();
    expect(a.state.n).toBe(5);
    await a.close();
  });
  it("a call waiting for a group fails at its own deadline, not when an append ends", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setAppendDelay(1_500);
    const travelling = Array.from({ length: 4 }, () => a.updateUnconditionally("add", { by: 1 }));
    const t0 = Date.now();
    const e = (await a
      .updateUnconditionally("add", { by: 1 }, { outcomeTimeoutMs: 200 })
      .catch((x: unknown) => x)) as StateSyncError;
    expect([e.code, e.details.notSent]).toEqual(["UNAVAILABLE", true]);
    expect(Date.now() - t0).toBeLessThan(1_000); // before: ~1,500 ms, when an append ended
    await Promise.all(travelling);
    expect(a.state.n).toBe(4);
    await a.close();
  });
});

describe("the commands entry (format 4)", () => {
  const entry = (commands: unknown[], extra: object = {}) =>
    new TextEncoder().encode(
      JSON.stringify({ v: 4, kind: "commands", ts: 1, client: "c", commands, ...extra }),
    );
  const call = { seed: 1, name: "add", args: { by: 1 } };

  it("decodes, and refuses fewer than 2 commands, bad seeds or names, and other kinds at v4", () => {
    expect(decodeEntry(entry([call, call])).ok).toBe(true);
    for (const bad of [
      entry([]),
      entry([call]),
      entry([call, { ...call, seed: -1 }]),
      entry([call, { ...call, name: "" }]),
      entry([call, { seed: 1, args: {} }]),
      entry(Array(1_025).fill(call)),
      new TextEncoder().encode(
        JSON.stringify({ v: 4, kind: "command", ts: 1, client: "c", ...call }),
      ),
    ]) {
      const d = decodeEntry(bad);
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.error.code).toBe("CORRUPT_ENTRY");
    }
    const newer = decodeEntry(new TextEncoder().encode(JSON.stringify({ v: 5, kind: "x" })));
    expect(!newer.ok && newer.error.code).toBe("UNSUPPORTED_FORMAT");
  });

  it("applies each command on its own: one that throws or breaks the schema is a no-op, the rest apply", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const data = encodeEntry({
      v: 4,
      kind: "commands",
      ts: 1,
      client: "tool",
      commands: [
        { seed: 1, name: "add", args: { by: 2 } },
        { seed: 2, name: "add", args: { by: -5 } }, // n would be negative: fails the schema
        { seed: 3, name: "boom", args: {} },
        { seed: 4, name: "add", args: { by: 3 } },
      ],
    });
    const { revision } = await log.appendUnconditional(data, "tool-1");
    await a.fetchUpdates();
    expect(a.state.n).toBe(5);
    const failures = a.errors.filter((e) => e.details.revision === revision);
    expect(failures.map((e) => [e.code, e.details.index])).toEqual([
      ["COMMAND_FAILED", 1],
      ["COMMAND_FAILED", 2],
    ]);
    // The message counts from 1 (details.index from 0): the second of four is "command 2 of 4".
    expect(failures.map((e) => e.message.match(/\(command .*\)$/)?.[0])).toEqual([
      `(command 2 of 4 in the entry at revision ${revision})`,
      `(command 3 of 4 in the entry at revision ${revision})`,
    ]);
    // The verdict tools list: applied, with the commands that were no-ops.
    const verdicts = new EntryVerdicts(tally, true);
    // A command the model does not know stops the replica before the entry, as alone.
    const unknown = await log.appendUnconditional(
      encodeEntry({
        v: 4,
        kind: "commands",
        ts: 1,
        client: "t",
        commands: [
          { seed: 1, name: "add", args: { by: 1 } },
          { seed: 2, name: "gone", args: {} },
        ],
      }),
      "tool-2",
    );
    let last;
    for await (const e of log.read(1, revision)) last = verdicts.next(e);
    expect(last).toMatchObject({ kind: "applied" });
    expect((last as { failures?: StateSyncError[] }).failures?.map((e) => e.details.index)).toEqual(
      [1, 2],
    );
    await until(() => a.status === "stalled");
    expect(a.revision).toBe(revision);
    expect((a.stallReason as StateSyncError).code).toBe("UNKNOWN_COMMAND");
    expect((a.stallReason as StateSyncError).details.revision).toBe(unknown.revision);
    await a.close();
  });

  it("applies a commands entry exactly as the same commands in entries of their own (property)", async () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    for (let trial = 0; trial < 40; trial++) {
      const commands = Array.from({ length: 2 + rand(30) }, (_, i) => {
        const r = rand(10);
        if (r === 0) return { seed: i, name: "boom", args: {} };
        if (r === 1) return { seed: i, name: "add", args: { by: "x" } }; // args fail their schema
        return { seed: i, name: "add", args: { by: rand(7) - 4 } }; // may go below 0: a no-op
      });
      const together = new MemoryLog();
      const apart = new MemoryLog();
      const a = await open(together, false);
      const b = await open(apart, false);
      await together.appendUnconditional(
        encodeEntry({ v: 4, kind: "commands", ts: 5, client: "t", commands }),
        "t",
      );
      for (const [i, c] of commands.entries()) {
        await apart.appendUnconditional(
          encodeEntry({ v: 3, kind: "command", ts: 5, client: "t", ...c }),
          `t${i}`,
        );
      }
      await a.fetchUpdates();
      await b.fetchUpdates();
      // The same state (ctx.revision differs: one entry against many; compare the sums).
      expect(a.state.n).toBe(b.state.n);
      expect(a.state.log.length).toBe(b.state.log.length);
      const failedTogether = a.errors.map((e) => [e.code, e.details.index]);
      const failedApart = b.errors.map((e) => [
        e.code,
        (e.details.revision as number) - (b.revision - commands.length) - 1,
      ]);
      expect(failedTogether).toEqual(failedApart);
      await a.close();
      await b.close();
    }
  });
});
