// The leading tab checks every request it answers (docs/offline.md, "Tabs"): the
// BroadcastChannel is a boundary (another script of the origin, or a tab of another version of
// the app, can post anything). Here a raw tab (test/support/raw-tab.ts) posts malformed requests
// to a leading TabLog over a MemoryLog. Before, only `append` and `otherStateAt` were checked:
// `truncateBefore("9")` truncated the log, `entryAt({})` answered "no entry", a `read` of strings
// answered whatever the log made of them, and a request of an op the leader did not know was
// dropped (the caller waited 10 s for its call to time out).
import { MemoryLog, type LogEntry, type RevisionedLog } from "@statesync/core";
import { afterEach, expect, it } from "vitest";
import { TabLog } from "../src/tabs/tab-log.js";
import { originName, RawTab, until, type RawAnswer } from "./support/raw-tab.js";

const closing: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** A leading TabLog over `log` (holding 4 entries), and a raw tab on its channel. */
async function leaderAndRaw(log: RevisionedLog = new MemoryLog()) {
  const raw = new RawTab(originName("requests"));
  closing.push(() => raw.close());
  const leader = new TabLog({
    name: raw.name,
    contiguous: true,
    locks: raw.locks,
    tokens: raw.tokens,
    tabId: "leader",
    leaderLog: () => ({ log, close: async () => undefined }),
  });
  closing.push(() => leader.close());
  await until(() => leader.leading);
  for (let i = 1; i <= 4; i++) await log.appendUnconditional(new Uint8Array([i]), `m${i}`);
  return { leader, raw, log };
}

/** Posts a `req` and waits for its answer. */
async function ask(raw: RawTab, op: string, args: unknown[]): Promise<RawAnswer> {
  const id = raw.request("leader", op, args);
  await until(() => raw.answers.some((a) => a.id === id));
  return raw.answers.find((a) => a.id === id)!;
}

async function revisions(log: RevisionedLog): Promise<number[]> {
  const out: number[] = [];
  for await (const e of log.read(1, 100)) out.push(e.revision);
  return out;
}

const bytes = new Uint8Array([9]);

/** Malformed arguments per op: each must be answered `VALIDATION`, the log left as it was. */
const malformed: Array<[string, unknown[]]> = [
  ["info", ["extra"]],
  ["read", ["1", 4]],
  ["read", [1, null]],
  ["read", [-1, 4]],
  ["read", [1.5, 4]],
  ["entryAt", [{}]],
  ["entryAt", []],
  ["findByMessageId", [5, 0]],
  ["findByMessageId", ["m1", "0"]],
  ["findByMessageId", ["m1", 0, -3]],
  ["truncateBefore", ["9"]],
  ["truncateBefore", [Number.MAX_VALUE]],
  ["truncateBefore", [null]],
  ["otherStateAt", [0]],
  ["append", ["bytes", null, "m9"]],
  ["append", [bytes, "3", "m9"]],
  ["append", [bytes, -1, "m9"]],
  ["append", [bytes, null, 9]],
  ["append", [bytes, null, "m9", "5000"]],
];

for (const [op, args] of malformed) {
  it(`the leading tab answers ${op}(${JSON.stringify(args)}) VALIDATION and changes nothing`, async () => {
    const { raw, log } = await leaderAndRaw();
    const answer = await ask(raw, op, args);
    expect(answer.error?.code, JSON.stringify(answer)).toBe("VALIDATION");
    expect(await revisions(log)).toEqual([1, 2, 3, 4]);
  });
}

it("the leading tab answers an op it does not know at once: VALIDATION, unsupportedOp", async () => {
  // A tab of a newer version of the app calls an op this version lacks: it learns so at once
  // instead of waiting 10 s for its call to time out.
  const { raw } = await leaderAndRaw();
  const unknown = raw.request("leader", "compactTo", [3]);
  const known = await ask(raw, "info", []);
  expect(known.value).toMatchObject({ latestRevision: 4 });
  // The leader answers requests as they come, and the unknown op's answer needs no log call.
  const answer = raw.answers.find((a) => a.id === unknown);
  expect(answer?.error?.code, JSON.stringify(raw.answers)).toBe("VALIDATION");
  expect(answer?.error?.details).toMatchObject({ unsupportedOp: "compactTo", notSent: true });
});

it("the leading tab posts an entryAt answer as its own bytes, not the buffer it is a view of", async () => {
  // A client's message may be a view of a larger buffer; a posted view copies the whole buffer
  // (as `read` answers already did not: `toWire`).
  const memory = new MemoryLog();
  const big = new Uint8Array(1 << 20);
  const viewing: RevisionedLog = new Proxy(memory, {
    get(target, prop, receiver) {
      if (prop === "entryAt") {
        return async (revision: number): Promise<LogEntry | undefined> => {
          const e = await target.entryAt(revision);
          if (!e) return e;
          big.set(e.data, 100);
          return { ...e, data: big.subarray(100, 100 + e.data.length) };
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  const { raw } = await leaderAndRaw(viewing);
  const answer = await ask(raw, "entryAt", [2]);
  const data = (answer.value as LogEntry).data;
  expect(data).toEqual(new Uint8Array([2]));
  expect(data.buffer.byteLength).toBe(1);
});
