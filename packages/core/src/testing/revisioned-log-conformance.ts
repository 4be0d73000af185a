import { describe, expect, it } from "vitest";
import { isStateSyncError, type StateSyncErrorCode } from "../errors.js";
import type { LogEntry, RevisionedLog } from "../log.js";
import { otherStateAtCases } from "./other-state-conformance.js";

/** What a {@link runRevisionedLogConformance} factory returns for one test. */
export interface RevisionedLogHarness {
  /** A fresh, empty log. */
  log: RevisionedLog;
  /** Another handle on the same log (another connection where that applies). */
  openAnother(): Promise<RevisionedLog>;
  /**
   * A handle on ANOTHER state in the same backend (another key of the same shared stream, or
   * another stream): nothing of it may show in this log.
   */
  openSibling?(): Promise<RevisionedLog>;
  /**
   * True when `openSibling` opens another state of this log's stream (another key of a shared
   * stream) and this log's `otherStateAt` can tell its entries: true at their revisions. Absent:
   * false there (the sibling lives in another stream, or the log cannot tell, as `JetStreamLog`
   * for a tenant denied direct gets).
   */
  seesSiblingEntries?: boolean;
  /** Deletes the log and creates it again; resolves to a handle on the new incarnation. */
  recreate?(): Promise<RevisionedLog>;
  /**
   * Another handle on the same log over a connection of its own, and a function that ends that
   * connection for good (JetStream: `nc.close()`; `MemoryLog.closeConnection()`).
   */
  openClosable?(): Promise<{ log: RevisionedLog; closeConnection(): Promise<void> }>;
  teardown?(): Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const bytes = (s: string) => enc.encode(s);

async function collect(iter: AsyncIterable<LogEntry>): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

async function expectCode(p: Promise<unknown>, code: StateSyncErrorCode): Promise<unknown> {
  let error: unknown;
  try {
    await p;
  } catch (e) {
    error = e;
  }
  expect(isStateSyncError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  return error;
}

function until<T>(fn: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = () => {
      const v = fn();
      if (v !== undefined) return resolve(v);
      if (Date.now() - start > timeoutMs) return reject(new Error("condition not reached"));
      setTimeout(tick, 5);
    };
    tick();
  });
}

/**
 * The conformance suite every {@link RevisionedLog} passes (automerge-repo style). The factory
 * returns a fresh, empty log per test.
 */
export function runRevisionedLogConformance(
  name: string,
  factory: () => Promise<RevisionedLogHarness>,
): void {
  describe(`RevisionedLog conformance: ${name}`, () => {
    async function withLog(fn: (h: RevisionedLogHarness) => Promise<void>): Promise<void> {
      const h = await factory();
      try {
        await fn(h);
      } finally {
        await h.log.close();
        await h.teardown?.();
      }
    }

    it("starts empty with an identity and a size limit", () =>
      withLog(async ({ log }) => {
        const info = await log.info();
        expect(info.latestRevision).toBe(0);
        expect(info.firstRevision).toBe(0);
        expect(info.identity.length).toBeGreaterThan(0);
        expect(info.maxEntryBytes).toBeGreaterThan(1000);
      }));

    it("appends conditionally and reads back in order", () =>
      withLog(async ({ log }) => {
        const a = await log.appendConditional(bytes("a"), 0, "id-a");
        expect(a.duplicate).toBe(false);
        expect(a.revision).toBeGreaterThan(0);
        const b = await log.appendConditional(bytes("b"), a.revision, "id-b");
        expect(b.revision).toBeGreaterThan(a.revision);
        if (log.contiguous) expect(b.revision).toBe(a.revision + 1);
        const info = await log.info();
        expect(info.latestRevision).toBe(b.revision);
        expect(info.firstRevision).toBe(a.revision);
        const entries = await collect(log.read(1, b.revision));
        expect(entries.map((e) => dec.decode(e.data))).toEqual(["a", "b"]);
        expect(entries.map((e) => e.revision)).toEqual([a.revision, b.revision]);
        expect(entries.map((e) => e.messageId)).toEqual(["id-a", "id-b"]);
      }));

    it("rejects a conditional append at a stale revision with CONFLICT and stores nothing", () =>
      withLog(async ({ log }) => {
        const a = await log.appendConditional(bytes("a"), 0, "id-a");
        await expectCode(log.appendConditional(bytes("x"), 0, "id-x"), "CONFLICT");
        await log.appendConditional(bytes("b"), a.revision, "id-b");
        await expectCode(log.appendConditional(bytes("y"), a.revision, "id-y"), "CONFLICT");
        const entries = await collect(log.read(1, (await log.info()).latestRevision));
        expect(entries.map((e) => dec.decode(e.data))).toEqual(["a", "b"]);
      }));

    it("lets exactly one of several concurrent conditional appends at one revision win", () =>
      withLog(async ({ log, openAnother }) => {
        const others = await Promise.all([openAnother(), openAnother(), openAnother()]);
        try {
          const base = (await log.appendConditional(bytes("g"), 0, "g")).revision;
          const results = await Promise.allSettled(
            [log, ...others].map((l, i) => l.appendConditional(bytes(`w${i}`), base, `w${i}`)),
          );
          expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
          for (const r of results) {
            if (r.status === "rejected") expect(isStateSyncError(r.reason, "CONFLICT")).toBe(true);
          }
        } finally {
          await Promise.all(others.map((o) => o.close()));
        }
      }));

    it("deduplicates a re-sent message id and answers the original revision", () =>
      withLog(async ({ log }) => {
        const a = await log.appendConditional(bytes("a"), 0, "same");
        const again = await log.appendConditional(bytes("a"), 0, "same");
        expect(again).toEqual({ revision: a.revision, duplicate: true });
        const u = await log.appendUnconditional(bytes("u"), "u-1");
        const u2 = await log.appendUnconditional(bytes("u"), "u-1");
        expect(u2).toEqual({ revision: u.revision, duplicate: true });
        expect((await log.info()).latestRevision).toBe(u.revision);
      }));

    it("appends unconditionally at the tail", () =>
      withLog(async ({ log }) => {
        const a = await log.appendUnconditional(bytes("1"), "u1");
        const b = await log.appendUnconditional(bytes("2"), "u2");
        expect(b.revision).toBeGreaterThan(a.revision);
        const c = await log.appendConditional(bytes("3"), b.revision, "c3");
        expect(c.revision).toBeGreaterThan(b.revision);
      }));

    it("reads a bounded range", () =>
      withLog(async ({ log }) => {
        const revs: number[] = [];
        for (let i = 0; i < 5; i++)
          revs.push((await log.appendUnconditional(bytes(`${i}`), `m${i}`)).revision);
        const mid = await collect(log.read(revs[1]!, revs[3]!));
        expect(mid.map((e) => dec.decode(e.data))).toEqual(["1", "2", "3"]);
        expect(await collect(log.read(revs[4]! + 1, revs[4]! + 10))).toEqual([]);
      }));

    it("reads an entry by revision and finds an entry by message id", () =>
      withLog(async ({ log }) => {
        const a = await log.appendUnconditional(bytes("a"), "ma");
        const b = await log.appendUnconditional(bytes("b"), "mb");
        const at = await log.entryAt(b.revision);
        expect(at?.messageId).toBe("mb");
        expect(dec.decode(at!.data)).toBe("b");
        expect(await log.entryAt(b.revision + 100)).toBeUndefined();
        expect(await log.findByMessageId("mb", a.revision)).toBe(b.revision);
        expect(await log.findByMessageId("ma", a.revision)).toBeUndefined();
        expect(await log.findByMessageId("mb", 0, 10)).toBe(b.revision);
        expect(await log.findByMessageId("nope", 0, 10)).toBeUndefined();
      }));

    it("follows existing and new entries in order, also from another handle", () =>
      withLog(async ({ log, openAnother }) => {
        const writer = await openAnother();
        try {
          await writer.appendUnconditional(bytes("0"), "f0");
          const seen: LogEntry[] = [];
          const follower = log.follow(1, { onEntry: (e) => seen.push(e) });
          for (let i = 1; i < 20; i++) await writer.appendUnconditional(bytes(`${i}`), `f${i}`);
          await until(() => (seen.length >= 20 ? true : undefined));
          await follower.stop();
          expect(seen.map((e) => dec.decode(e.data))).toEqual(
            Array.from({ length: 20 }, (_, i) => `${i}`),
          );
          const revs = seen.map((e) => e.revision);
          expect([...revs].sort((x, y) => x - y)).toEqual(revs);
          const countAfterStop = seen.length;
          await writer.appendUnconditional(bytes("late"), "late");
          await new Promise((r) => setTimeout(r, 100));
          expect(seen.length).toBe(countAfterStop);
        } finally {
          await writer.close();
        }
      }));

    it("follows from a revision in the middle", () =>
      withLog(async ({ log }) => {
        const revs: number[] = [];
        for (let i = 0; i < 4; i++)
          revs.push((await log.appendUnconditional(bytes(`${i}`), `x${i}`)).revision);
        const seen: string[] = [];
        const follower = log.follow(revs[2]!, { onEntry: (e) => seen.push(dec.decode(e.data)) });
        await until(() => (seen.length >= 2 ? true : undefined));
        await follower.stop();
        expect(seen).toEqual(["2", "3"]);
      }));

    it("truncates before a revision and keeps appending", () =>
      withLog(async ({ log }) => {
        const revs: number[] = [];
        for (let i = 0; i < 5; i++)
          revs.push((await log.appendUnconditional(bytes(`${i}`), `t${i}`)).revision);
        await log.truncateBefore(revs[3]!);
        const info = await log.info();
        expect(info.firstRevision).toBe(revs[3]);
        expect(info.latestRevision).toBe(revs[4]);
        const rest = await collect(log.read(1, revs[4]!));
        expect(rest.map((e) => dec.decode(e.data))).toEqual(["3", "4"]);
        await log.truncateBefore(revs[3]!);
        await log.truncateBefore(revs[1]!);
        expect((await log.info()).firstRevision).toBe(revs[3]);
        const next = await log.appendConditional(bytes("5"), revs[4]!, "t5");
        expect(next.revision).toBeGreaterThan(revs[4]!);
      }));

    it("sends no append whose signal has already aborted (UNAVAILABLE, notSent); limits that hold change nothing", () =>
      withLog(async ({ log }) => {
        const aborted = new AbortController();
        aborted.abort();
        for (const append of [
          () => log.appendConditional(bytes("a"), 0, "id-a", { signal: aborted.signal }),
          () => log.appendUnconditional(bytes("a"), "id-a", { signal: aborted.signal }),
        ]) {
          const error = await append().then(
            () => undefined,
            (e: unknown) => e as { code?: string; details?: { notSent?: unknown } },
          );
          expect(error?.code).toBe("UNAVAILABLE");
          expect(error?.details?.notSent).toBe(true);
        }
        expect((await log.info()).latestRevision).toBe(0);
        const live = new AbortController();
        const a = await log.appendConditional(bytes("a"), 0, "id-a", {
          timeoutMs: 30_000,
          signal: live.signal,
        });
        const b = await log.appendUnconditional(bytes("b"), "id-b", { timeoutMs: 30_000 });
        expect(b.revision).toBeGreaterThan(a.revision);
      }));

    it("refuses an entry larger than maxEntryBytes with PAYLOAD_TOO_LARGE before storing it", () =>
      withLog(async ({ log }) => {
        const { maxEntryBytes } = await log.info();
        await expectCode(
          log.appendUnconditional(new Uint8Array(maxEntryBytes + 1), "big"),
          "PAYLOAD_TOO_LARGE",
        );
        expect((await log.info()).latestRevision).toBe(0);
      }));

    it("keeps a sibling state's entries and message ids apart", () =>
      withLog(async (h) => {
        if (!h.openSibling) return;
        const sibling = await h.openSibling();
        try {
          const s1 = await sibling.appendConditional(bytes("s1"), 0, "shared-id");
          const mine = await h.log.appendConditional(bytes("m1"), 0, "shared-id");
          expect(mine.duplicate).toBe(false);
          await sibling.appendUnconditional(bytes("s2"), "s2");
          const mine2 = await h.log.appendConditional(bytes("m2"), mine.revision, "m2");
          const seen: string[] = [];
          const follower = h.log.follow(1, { onEntry: (e) => seen.push(dec.decode(e.data)) });
          await until(() => (seen.length >= 2 ? true : undefined));
          await new Promise((r) => setTimeout(r, 50));
          await follower.stop();
          expect(seen).toEqual(["m1", "m2"]);
          const read = await collect(h.log.read(1, mine2.revision));
          expect(read.map((e) => dec.decode(e.data))).toEqual(["m1", "m2"]);
          const at = await h.log.entryAt(s1.revision);
          if (at !== undefined) expect(dec.decode(at.data)).not.toBe("s1");
          expect((await h.log.info()).latestRevision).toBe(mine2.revision);
          expect(await h.log.findByMessageId("s2", mine.revision, 10)).toBeUndefined();
        } finally {
          await sibling.close();
        }
      }));

    it("changes identity when recreated", () =>
      withLog(async (h) => {
        if (!h.recreate) return;
        await h.log.appendUnconditional(bytes("a"), "a");
        const before = (await h.log.info()).identity;
        const fresh = await h.recreate();
        try {
          const info = await fresh.info();
          expect(info.identity).not.toBe(before);
          expect(info.latestRevision).toBe(0);
        } finally {
          await fresh.close();
        }
      }));

    it("ends for good when its connection closes: status closed, every call CONNECTION_CLOSED", () =>
      withLog(async (h) => {
        if (!h.openClosable) return;
        const { log: own, closeConnection } = await h.openClosable();
        try {
          const first = await own.appendUnconditional(bytes("cc1"), "cc1");
          const seen: LogEntry[] = [];
          const follower = own.follow(1, { onEntry: (e) => seen.push(e) });
          await until(() => (seen.length >= 1 ? true : undefined));
          const statuses: string[] = [];
          let reported: unknown;
          own.watchStatus((status, error) => {
            statuses.push(status);
            if (status === "closed") reported = error;
          });
          await closeConnection();
          await until(() => (own.status === "closed" ? true : undefined));
          expect(statuses.at(-1)).toBe("closed");
          expect(isStateSyncError(reported, "CONNECTION_CLOSED"), String(reported)).toBe(true);
          const calls: Array<() => Promise<unknown>> = [
            () => own.info(),
            () => own.appendUnconditional(bytes("cc2"), "cc2"),
            () => own.appendConditional(bytes("cc2"), first.revision, "cc2"),
            () => collect(own.read(1, first.revision)),
            () => own.entryAt(first.revision),
            () => own.findByMessageId("cc1", 0, 10),
          ];
          for (const call of calls) await expectCode(call(), "CONNECTION_CLOSED");
          // The log goes on for its other connections; nothing more reaches the closed one.
          const later = await h.log.appendUnconditional(bytes("cc3"), "cc3");
          const other: LogEntry[] = [];
          const watching = h.log.follow(later.revision, { onEntry: (e) => other.push(e) });
          await until(() => (other.length >= 1 ? true : undefined));
          await watching.stop();
          expect(seen.map((e) => e.revision)).toEqual([first.revision]);
          expect(own.status).toBe("closed");
          expect(statuses.filter((s) => s === "closed")).toHaveLength(1);
          await follower.stop();
        } finally {
          await own.close();
        }
      }));

    otherStateAtCases(withLog);

    it("rejects calls after close with CLOSED", () =>
      withLog(async ({ log }) => {
        await log.close();
        await expectCode(log.appendUnconditional(bytes("a"), "a"), "CLOSED");
        await expectCode(log.info(), "CLOSED");
      }));
  });
}
