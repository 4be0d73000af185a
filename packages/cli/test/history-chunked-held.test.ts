import { TextDigest } from "../../core/src/chunked.js";
import { describe, expect, it } from "vitest";
import {
  counter,
  MODEL,
  runCli,
  runJson,
  seededCounter,
  target,
  startTail,
  tcp,
  useNatsServer,
} from "./helpers.js";

/**
 * `history --model` and `tail --model` on entries written between a chunked snapshot's parts (by
 * writers that need not wait for a compaction): the replay holds them until the snapshot entry
 * loads, then replays them onto its state (a log that starts at the parts: the history before them
 * was truncated, as a compaction does). Before, they were listed without a mark whatever the
 * replay then made of them: a stale conditional update held there read as applied.
 */
describe("history on entries held while a chunked snapshot's parts are read", () => {
  const ctx = useNatsServer();
  const head = { ts: 1_700_000_000_000, client: "raw" };

  /** Parts based on revision 2 (the state `{count: 2}`) at 3, 4 and 7; two entries between. */
  function entries(): string[] {
    const text = JSON.stringify({ count: 2, notes: [] });
    const data = [text.slice(0, 10), text.slice(10)];
    const digest = new TextDigest();
    for (const d of data) digest.update(d);
    const part = (index: number, d: string) =>
      JSON.stringify({ v: 1, kind: "part", ...head, id: "p1", index, base: 2, data: d });
    const stale = { v: 1, kind: "update", ...head, base: 1, seed: 1 };
    const patches = [{ op: "replace", path: ["count"], value: 50 }];
    const snapshot = {
      v: 2,
      kind: "snapshot",
      ...head,
      base: 2,
      model: counter.name,
      version: counter.version,
      initialHash: counter.initialHash,
      parts: { id: "p1", count: 3, bytes: digest.bytes, sha256: digest.hex() },
    };
    return [
      part(0, ""), // 3
      part(1, data[0]!), // 4
      JSON.stringify({ ...stale, patches }), // 5: based on 1, stale at 2
      JSON.stringify({ v: 3, kind: "command", mv: 1, ...head, seed: 1, name: "boom", args: {} }),
      part(2, data[1]!), // 7
      JSON.stringify(snapshot), // 8
      JSON.stringify({
        v: 3,
        kind: "command",
        mv: 1,
        ...head,
        seed: 1,
        name: "increment",
        args: { by: 1 },
      }),
    ];
  }

  /** The stream, its history before part 0 (revision 3) purged, as a compaction leaves it. */
  async function compacted(prefix: string): Promise<string> {
    const stream = await seededCounter(ctx.server.url, prefix, entries());
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.purge(stream, { seq: 3 });
    await nc.close();
    return stream;
  }

  it("marks them with what the replay made of them once the snapshot entry loaded", async () => {
    const stream = await compacted("HELD");
    const where = (...more: string[]) => target(ctx.server.url, stream, "--model", MODEL, ...more);
    const rows = await runJson(["history", ...where()]);
    const byRevision = new Map(rows.map((r: { revision: number }) => [r.revision, r]));
    expect(byRevision.get(5)).toMatchObject({
      replay: { verdict: "skipped", error: expect.stringMatching(/^CORRUPT_ENTRY: /) },
    });
    expect(byRevision.get(6)).toMatchObject({
      replay: { verdict: "no-op", error: expect.stringMatching(/^COMMAND_FAILED: .*boom refuses/) },
    });
    for (const r of [3, 4, 7, 8, 9]) expect(byRevision.get(r)).not.toHaveProperty("replay");
    const text = await runCli(["history", ...where()]);
    expect(text.stdout).toMatch(/\[skipped: CORRUPT_ENTRY: /);
    const state = await runJson(["state", ...where()]);
    expect(state).toMatchObject({ revision: 9, state: { count: 3 } }); // the stale update skipped
  });

  it("history --from lists only the range, with the marks found after it", async () => {
    const stream = await compacted("HELDFROM");
    const rows = await runJson([
      "history",
      ...target(ctx.server.url, stream, "--model", MODEL, "--from", "5"),
    ]);
    expect(rows.map((r: { revision: number }) => r.revision)).toEqual([5, 6, 7, 8, 9]);
    expect(rows[0]).toMatchObject({ replay: { verdict: "skipped" } });
  });

  it("tail says what became of an entry it printed before the snapshot entry loaded", async () => {
    const stream = await compacted("HELDTAIL");
    const tail = startTail([...target(ctx.server.url, stream, "--model", MODEL), "--from", "3"]);
    await tail.until(({ stderr }) => /revision 6, printed above/.test(stderr));
    const { stderr } = tail.out();
    expect(stderr).toMatch(
      /statesync: revision 5, printed above, once the chunked snapshot at revision 8 loaded: \[skipped: CORRUPT_ENTRY: /,
    );
    expect(stderr).toMatch(
      /revision 6, printed above, .*: \[no-op: COMMAND_FAILED: .*boom refuses/,
    );
    tail.child.kill("SIGINT");
    expect((await tail.exited).code).toBe(0);
  });
});
