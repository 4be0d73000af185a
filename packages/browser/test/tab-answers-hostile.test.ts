// A follower tab checks every answer the leading tab posts (docs/offline.md, "Tabs"): the
// BroadcastChannel is a boundary (another script of the origin, or a tab of another version of
// the app, can post anything). Here the "leader" is a raw tab (test/support/raw-tab.ts) that
// answers malformed. Before, a follower trusted every answer but `otherStateAt`'s by a cast: a
// `read` page of strings, or of entries outside the range asked, reached its replica as entries.
import { createSynchronizer, isStateSyncError, MemoryLog, type LogEntry } from "@statesync/core";
import { afterEach, expect, it } from "vitest";
import { TabLog } from "../src/tabs/tab-log.js";
import { followerOf, originName, RawTab, type RawRequest } from "./support/raw-tab.js";
import { notes } from "./support/models.js";

const closing: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A follower tab of a raw leader that answers every call with `answer(req)`. */
async function answeredBy(answer: (req: RawRequest) => unknown) {
  const leader = new RawTab(originName("answers"));
  leader.answer = answer;
  leader.lead();
  closing.push(() => leader.close());
  const log = await followerOf(leader);
  closing.push(() => log.close());
  return { log, leader };
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => ({ resolved: v }),
    (e: unknown) => e,
  );
}

async function collect(iter: AsyncIterable<LogEntry>): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

const entry = (revision: number, data: unknown = new Uint8Array([1])) => ({ revision, data });
const info = { identity: "log-1", firstRevision: 1, latestRevision: 4, maxEntryBytes: 1_000_000 };

/** Per op: the call, and malformed answers to it (each must reject `VALIDATION`). */
const cases: Array<[string, (log: TabLog) => Promise<unknown>, unknown[]]> = [
  [
    "info",
    (log) => log.info(),
    [
      undefined,
      { ...info, latestRevision: -1 },
      { ...info, firstRevision: 1.5 },
      { ...info, identity: 7 },
      { ...info, maxEntryBytes: "big" },
    ],
  ],
  [
    "read(2, 5)",
    (log) => collect(log.read(2, 5)),
    [
      "entries",
      [entry(2, "not bytes")],
      [entry(2, [1, 2])],
      [entry(1)], // before the range asked
      [entry(6)], // after it
      [entry(3), entry(2)], // out of order
      [entry(3), entry(3)], // twice
      [entry(2.5)],
      [{ data: new Uint8Array() }],
      Array.from({ length: 300 }, (_, i) => entry(i + 2)), // more than a page
    ],
  ],
  [
    "entryAt(5)",
    (log) => log.entryAt(5),
    [entry(6), entry(5, "bytes"), entry(-5), { revision: 5 }, null, 5],
  ],
  ["findByMessageId", (log) => log.findByMessageId("m", 5, 10), ["7", 5, 2, -1, 7.5, null]],
  ["truncateBefore", (log) => log.truncateBefore(3), [42, "done", {}]],
  ["otherStateAt", (log) => log.otherStateAt(3), ["true", 1, undefined]],
];

for (const [name, call, answers] of cases) {
  it(`a follower tab refuses the leader's malformed answers to ${name} (VALIDATION)`, async () => {
    let next = 0;
    const { log } = await answeredBy(() => answers[next]);
    for (; next < answers.length; next++) {
      const error = await failure(call(log));
      expect(isStateSyncError(error, "VALIDATION"), `answer ${next}: ${String(error)}`).toBe(true);
    }
  });
}

it("a follower tab takes the leader's well-formed answers as they are", async () => {
  const { log } = await answeredBy((req) => {
    if (req.op === "info") return { ...info, logPosition: 9, truncationDenied: true };
    if (req.op === "read") return [entry(2), { ...entry(4), messageId: "m4" }];
    if (req.op === "entryAt") return { ...entry(5), skipped: true };
    if (req.op === "findByMessageId") return 7;
    if (req.op === "otherStateAt") return true;
    if (req.op === "append") return { revision: 8, duplicate: true };
    return undefined;
  });
  expect(await log.info()).toEqual({ ...info, logPosition: 9, truncationDenied: true });
  expect(await collect(log.read(2, 5))).toEqual([entry(2), { ...entry(4), messageId: "m4" }]);
  expect(await log.entryAt(5)).toEqual({ ...entry(5), skipped: true });
  expect(await log.findByMessageId("m", 5, 10)).toBe(7);
  expect(await log.otherStateAt(5)).toBe(true);
  expect(await log.appendUnconditional(new Uint8Array([1]), "m8")).toEqual({
    revision: 8,
    duplicate: true,
  });
  expect(await log.truncateBefore(3)).toBeUndefined();
});

it("a malformed answer to an append leaves its outcome unknown (UNAVAILABLE, not notSent)", async () => {
  // The leader may have stored it: the engine re-sends the same bytes with the same message id.
  const answers = [{ revision: "8", duplicate: false }, { revision: 0, duplicate: false }, 8];
  let next = 0;
  const { log } = await answeredBy(() => answers[next]);
  for (; next < answers.length; next++) {
    const error = await failure(log.appendConditional(new Uint8Array([1]), 7, "m8"));
    expect(isStateSyncError(error, "UNAVAILABLE"), `answer ${next}: ${String(error)}`).toBe(true);
    expect((error as { details: Record<string, unknown> }).details).toMatchObject({
      malformed: true,
    });
    expect((error as { details: Record<string, unknown> }).details.notSent).toBeUndefined();
  }
});

it("a follower tab takes an error of a code it does not know as UNAVAILABLE, the code kept", async () => {
  // Before, it became a StateSyncError of code "BOGUS", which no caller matches (its engine took
  // a failed append of an unknown code for a refusal, not a passing failure to send again).
  const { log, leader } = await answeredBy(() => undefined);
  leader.answer = (req) => {
    const error = { code: "BOGUS", message: "from elsewhere", details: { x: 1 } };
    leader.post({ t: "res", id: req.id, to: req.from, error });
    return new Promise(() => undefined); // no second answer
  };
  for (const call of [() => log.info(), () => log.appendUnconditional(new Uint8Array(), "m")]) {
    const error = await failure(call());
    expect(isStateSyncError(error, "UNAVAILABLE"), String(error)).toBe(true);
    expect((error as { details: Record<string, unknown> }).details).toMatchObject({
      code: "BOGUS",
      x: 1,
    });
  }
});

/** Malformed read pages: each entry's revision past the log's end, or its bytes as a string. */
const garbles: Array<[string, (e: LogEntry) => unknown]> = [
  ["revisions past the range read", (e) => ({ ...e, revision: e.revision + 1000 })],
  ["bytes as a string", (e) => ({ ...e, data: new TextDecoder().decode(e.data) })],
];

it.each(garbles)(
  "a follower tab's replica takes nothing of a read page with %s, and catches up once the leader answers right",
  async (_, garble) => {
    // The log holds the genesis and one edit; the "leader" answers the follower from it, but while
    // `garbled` its read pages are malformed. Before, a page of revisions past the range read
    // reached the replica: it opened with no notes and a CORRUPT_ENTRY event, the edit every
    // other replica applied lost to it. (Bytes as a string, the engine refused already.)
    const server = new MemoryLog();
    const writer = await createSynchronizer({
      log: server.handle(),
      model: notes,
      compaction: false,
    });
    closing.push(() => writer.close());
    await writer.update("add", { text: "kept" });
    let garbled = true;
    const { log } = await answeredBy(async (req) => {
      const a = req.args as [number, number];
      if (req.op === "info") return server.info();
      if (req.op === "entryAt") return server.entryAt(a[0]);
      if (req.op === "read") {
        const page = await collect(server.read(a[0], a[1]));
        return garbled ? page.map(garble) : page;
      }
      return undefined;
    });
    const events: string[] = [];
    const open = () =>
      createSynchronizer({
        log,
        model: notes,
        compaction: false,
        snapshots: false,
        onError: (e) => events.push(e.code),
      });
    // The open's catch-up read fails, typed; the replica reported no entry corrupt.
    const first = await open().then(
      (sync) => (closing.push(() => sync.close()), { opened: sync.state, events }),
      (e: unknown) => e,
    );
    expect(isStateSyncError(first, "VALIDATION"), JSON.stringify(first)).toBe(true);
    expect(events).not.toContain("CORRUPT_ENTRY");
    garbled = false;
    const reader = await open();
    closing.push(() => reader.close());
    expect(reader.state.notes).toEqual(["kept"]);
    expect(reader.revision).toBe(writer.revision);
  },
);
