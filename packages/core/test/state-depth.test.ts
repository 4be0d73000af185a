import { describe, expect, it } from "vitest";
import {
  decodeEntry,
  MAX_STATE_DEPTH,
  MemoryLog,
  stateHash,
  type StateSyncError,
} from "@statesync/core";
import { codeOf, until } from "./fixtures.js";
import { depthOf, nested, openNest, olderSetDepth } from "./deep-models.js";

/**
 * A fresh-eyes trial: a state nested deeper than an entry may hold (docs/format.md, "Limits")
 * was written by compaction as a chunked snapshot every reader refused, and the history before
 * it truncated: new replicas failed TRUNCATED. Conditional updates could build such a state one
 * level at a time. In the `nest` model, `setDepth({ levels: L })` makes a state of L + 1 levels.
 */
const smallLog = () => new MemoryLog({ maxEntryBytes: 4096 });

async function kinds(log: MemoryLog): Promise<string[]> {
  const out: string[] = [];
  const { firstRevision, latestRevision } = await log.info();
  for await (const e of log.read(Math.max(1, firstRevision), latestRevision)) {
    const d = decodeEntry(e.data);
    out.push(
      d.ok ? (d.entry.kind === "snapshot" && "parts" in d.entry ? "chunked" : d.entry.kind) : "bad",
    );
  }
  return out;
}

/** A late replica opens the log and reaches `of`'s revision and state. */
async function expectLateJoinerAgrees(
  log: MemoryLog,
  of: { revision: number; state: unknown },
): Promise<void> {
  const late = await openNest(log);
  expect(late.revision).toBe(of.revision);
  expect(stateHash(late.state)).toBe(stateHash(of.state));
  await late.close();
}

describe("the state's depth limit", () => {
  it("is one level under the entries' nesting limit", () => {
    expect(MAX_STATE_DEPTH).toBe(255);
  });

  it("conditional updates never nest the state deeper: the writer refuses with VALIDATION and appends nothing", async () => {
    const log = new MemoryLog();
    const a = await openNest(log);
    await a.updateUnconditionally("setDepth", { levels: MAX_STATE_DEPTH - 2 });
    /** One level more at the bottom of the tree: a patch whose path is as long as the tree. */
    const deepen = (d: { tree: unknown[] }) => {
      let cur = d.tree;
      while (cur.length > 0) cur = cur[0] as unknown[];
      cur.push([]);
    };
    await a.update(deepen); // the state now nests exactly MAX_STATE_DEPTH levels
    expect(depthOf(a.state.tree) + 1).toBe(MAX_STATE_DEPTH);
    const latest = (await log.info()).latestRevision;
    const refused = await a.update(deepen).catch((e: StateSyncError) => e);
    expect((refused as StateSyncError).code).toBe("VALIDATION");
    expect((refused as StateSyncError).message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    // A deep value written at once, near the root, too.
    expect(
      await codeOf(
        a.update((d) => {
          d.tree = nested(MAX_STATE_DEPTH);
        }),
      ),
    ).toBe("VALIDATION");
    expect((await log.info()).latestRevision).toBe(latest);
    // Updates elsewhere, and ones that make the state shallower, go on.
    await a.update((d) => {
      d.n += 1;
    });
    await a.update((d) => {
      d.tree = [];
    });
    await a.close();
  });

  it("a state of exactly MAX_STATE_DEPTH levels compacts, in one entry and chunked, and late joiners load it", async () => {
    for (const chunked of [false, true]) {
      const log = chunked ? smallLog() : new MemoryLog();
      const a = await openNest(log);
      await a.updateUnconditionally("setDepth", { levels: MAX_STATE_DEPTH - 1 });
      if (chunked) await a.updateUnconditionally("fill", { bytes: 20_000 });
      const { revision } = await a.compact();
      expect((await kinds(log)).at(-1)).toBe(chunked ? "chunked" : "snapshot");
      expect(revision).toBe(a.revision);
      expect((await log.info()).firstRevision).toBeGreaterThan(1);
      await expectLateJoinerAgrees(log, a);
      await a.close();
    }
  });

  it("compaction of a deeper state in one entry is refused, typed, and the log is left as it was", async () => {
    const log = new MemoryLog();
    const a = await openNest(log);
    await olderSetDepth(log, a, MAX_STATE_DEPTH);
    const before = await kinds(log);
    const refused = await a.compact().catch((e: StateSyncError) => e);
    expect((refused as StateSyncError).code).toBe("VALIDATION");
    expect((refused as StateSyncError).message).toContain(`deeper than ${MAX_STATE_DEPTH}`);
    expect((refused as StateSyncError).message).toContain("nothing was written");
    expect(await kinds(log)).toEqual(before);
    await expectLateJoinerAgrees(log, a);
    await a.close();
  });

  it("chunked compaction of a deeper state writes no part and truncates nothing: new replicas still open", async () => {
    const log = smallLog();
    const a = await openNest(log);
    await a.updateUnconditionally("fill", { bytes: 20_000 });
    await olderSetDepth(log, a, 300);
    const before = await kinds(log);
    expect(await codeOf(a.compact())).toBe("VALIDATION");
    expect(await kinds(log)).toEqual(before);
    await expectLateJoinerAgrees(log, a);
    await a.close();
  });

  it("once a state needed chunks, a deeper one is refused before part 0", async () => {
    const log = smallLog();
    const a = await openNest(log);
    await a.updateUnconditionally("fill", { bytes: 20_000 });
    await a.compact(); // chunked: the next compaction starts with part 0
    expect((await kinds(log)).at(-1)).toBe("chunked");
    await olderSetDepth(log, a, 300);
    const before = await kinds(log);
    expect(await codeOf(a.compact())).toBe("VALIDATION");
    expect(await kinds(log)).toEqual(before);
    await expectLateJoinerAgrees(log, a);
    await a.close();
  });

  it("a chunked state readers refuse for another reason (an own __proto__ key) is refused before its parts", async () => {
    // The text of a chunked snapshot gets the readers' own checks before it is written, so the
    // truncation only ever follows parts every reader loads.
    const log = smallLog();
    const a = await openNest(log);
    await a.updateUnconditionally("protoKey", {});
    expect(Object.keys(a.state.tree as object)).toEqual(["__proto__"]);
    await a.updateUnconditionally("fill", { bytes: 20_000 });
    expect(await codeOf(a.compact())).toBe("VALIDATION");
    expect((await log.info()).firstRevision).toBe(1);
    expect((await kinds(log)).filter((k) => k === "chunked")).toEqual([]);
    await expectLateJoinerAgrees(log, a);
    await a.close();
  });

  it("automatic compaction of a deeper state reports one VALIDATION event and writes nothing", async () => {
    const log = smallLog();
    const a = await openNest(log, { compaction: { everyEntries: 5, jitter: 0 } });
    await a.updateUnconditionally("fill", { bytes: 20_000 });
    await olderSetDepth(log, a, 300);
    // Conditional: this SDK's unconditional commands are no-ops on a state this deep.
    for (let i = 0; i < 6; i++) await a.update("bump", {});
    await until(() => a.errors.length > 0 || a.stats.compactions > 0);
    expect(a.stats.compactions).toBe(0);
    expect(a.errors.map((e) => e.code)).toEqual(["VALIDATION"]);
    // Backed off (tenfold), and said once: more entries bring no retry storm of events.
    for (let i = 0; i < 20; i++) await a.update("bump", {});
    expect(a.errors.length).toBe(1);
    expect(await kinds(log)).not.toContain("part");
    expect((await log.info()).firstRevision).toBe(1);
    await expectLateJoinerAgrees(log, a);
    await a.close();
  });
});

describe("a chunked snapshot an older SDK wrote of a state nested too deep", () => {
  it("is never truncated to: compaction refuses, and new replicas replay the history", async () => {
    // Its parts hold the state the replica had at their base (so the hash matches), but every
    // reader refuses to parse them.
    const log = new MemoryLog();
    const a = await openNest(log);
    await olderSetDepth(log, a, 300);
    const base = a.revision;
    const text = JSON.stringify(a.state);
    const bytes = new TextEncoder().encode(text);
    const { createHash } = await import("node:crypto");
    const part = (index: number, data: string) =>
      JSON.stringify({ v: 1, kind: "part", ts: 1, client: "old", id: "deep", index, base, data });
    log.injectRaw(part(0, ""));
    log.injectRaw(part(1, text));
    log.injectRaw(
      JSON.stringify({
        v: 2,
        kind: "snapshot",
        base,
        ts: 1,
        client: "old",
        model: "nest",
        version: 1,
        initialHash: a.model.initialHash,
        parts: {
          id: "deep",
          count: 2,
          bytes: bytes.byteLength,
          sha256: createHash("sha256").update(bytes).digest("hex"),
        },
      }),
    );
    await a.fetchUpdates();
    expect(a.revision).toBe(base + 3); // passed over, with its own state
    expect(await codeOf(a.compact())).toBe("VALIDATION");
    expect((await log.info()).firstRevision).toBe(1);
    const late = await openNest(log); // it passes over the snapshot too, standing at its base
    expect(late.revision).toBe(a.revision);
    expect(stateHash(late.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), late.close()]);
  });
});
