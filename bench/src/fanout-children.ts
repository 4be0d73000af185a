/**
 * The bench side of the `fanout` benchmark's child processes (fanout-run.ts for statesync
 * followers, fanout-raw-run.ts for plain subscribers): starting them and waiting until all
 * are open, asking every child at once, polling until a condition holds, and the writer's marks
 * with the latencies they took to reach every follower.
 *
 * Every child speaks the same protocol: `progress` and `ready` while opening, then answers
 * `status` (`statuses` by follower status, `minMark`), `cpu`, `report` (per mark: followers that
 * got it and when the last did; state hashes) and ends on `stop`.
 */
import { Child } from "./lib/child.js";
import type { CounterSync } from "./lib/common.js";
import { sleep } from "./lib/harness.js";

/** Updates per second of the one writer. */
export const RATE = 2;
/** Updates before the measured ones (marks -1, -2, ... ; raw: 1 - WARMUP ... 0), not measured. */
export const WARMUP = 4;
/** Wall-clock ms with sub-ms resolution, comparable across processes of one machine. */
export const wallMs = () => performance.timeOrigin + performance.now();

/** What a child answers to `status`. */
export type Status = { statuses: Record<string, number>; minMark: number };

/** Asks every child for something and collects the answers. */
export async function ask<T>(children: Child[], type: string, timeoutMs = 60_000): Promise<T[]> {
  for (const c of children) c.send({ type });
  return Promise.all(children.map(async (c) => (await c.expect(type, timeoutMs)) as T));
}

/** Polls the children until `done(statuses)` or `capMs`; answers the ms it took, or undefined. */
export async function until(
  children: Child[],
  done: (s: Status[]) => boolean,
  capMs: number,
  progress: (s: Status[]) => void,
): Promise<number | undefined> {
  const start = Date.now();
  let lastPrint = 0;
  for (;;) {
    const s = await ask<Status>(children, "status");
    if (done(s)) return Date.now() - start;
    if (Date.now() - start > capMs) return undefined;
    if (Date.now() - lastPrint > 5_000) {
      lastPrint = Date.now();
      progress(s);
    }
    await sleep(200);
  }
}

export const sumStatus = (s: Status[], key: string) =>
  s.reduce((n, x) => n + (x.statuses[key] ?? 0), 0);
export const statusLine = (s: Status[]) => {
  const all: Record<string, number> = {};
  for (const x of s) for (const [k, n] of Object.entries(x.statuses)) all[k] = (all[k] ?? 0) + n;
  return Object.entries(all)
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
};
export const minMark = (s: Status[]) => Math.min(...s.map((x) => x.minMark));

/** Child processes for `followers`: 1 per 1,500, at least 2, at most 8. */
export const processesFor = (followers: number) =>
  Math.min(8, Math.max(2, Math.ceil(followers / 1500)));

/** The children once every one of them said `ready`. */
export interface OpenedChildren {
  children: Child[];
  openS: number;
  opened: number;
  failedToOpen: number;
  firstFailure: string | undefined;
  /** Resident memory the children grew by while opening, bytes (after a GC each). */
  clientBytes: number;
}

/**
 * Starts `processes` children of `task`, `params(count)` each (the followers spread evenly),
 * pushing them into `children` as they start (so the caller stops them whatever happens), and
 * waits until each is ready.
 */
export async function openChildren(
  task: string,
  followers: number,
  params: (count: number) => unknown,
  openCapMs: number,
  children: Child[],
  say: (m: string) => void,
): Promise<OpenedChildren> {
  const processes = processesFor(followers);
  say(`opening ${followers} in ${processes} processes`);
  const t0 = Date.now();
  for (let i = 0; i < processes; i++) {
    const count = Math.floor(followers / processes) + (i < followers % processes ? 1 : 0);
    children.push(Child.start(task, params(count), { placement: "shared" }));
  }
  const opened = new Array<number>(processes).fill(0);
  let lastPrint = 0;
  const ready = await Promise.all(
    children.map(async (c, i) => {
      for (;;) {
        const m = await c.next(openCapMs + 120_000);
        if (m.type === "ready") return m;
        opened[i] = Number(m.opened);
        if (Date.now() - lastPrint > 3_000) {
          lastPrint = Date.now();
          say(`opened ${opened.reduce((a, b) => a + b, 0)}/${followers}`);
        }
      }
    }),
  );
  const result = {
    children,
    openS: (Date.now() - t0) / 1000,
    opened: ready.reduce((n, m) => n + Number(m.opened), 0),
    failedToOpen: ready.reduce((n, m) => n + Number(m.failed), 0),
    firstFailure: ready.map((m) => m.firstFailure as string | undefined).find(Boolean),
    clientBytes: ready.reduce((n, m) => n + Number(m.rssAfter) - Number(m.rssBefore), 0),
  };
  say(`${result.opened} open in ${result.openS.toFixed(1)} s (${result.failedToOpen} failed)`);
  return result;
}

/** The warm-up updates (not measured): the first entries meet cold code paths everywhere. */
export async function warmUp(writer: CounterSync): Promise<void> {
  for (let i = 1; i <= WARMUP; i++) {
    await writer.update("mark", { seq: -i });
    await sleep(1000 / RATE);
  }
}

/** Writes marks 1..`updates` at {@link RATE}; answers when each `update()` was called (wall ms). */
export async function writeMarks(
  writer: CounterSync,
  updates: number,
  say: (m: string) => void,
): Promise<Map<number, number>> {
  const sent = new Map<number, number>();
  const w0 = Date.now();
  for (let seq = 1; seq <= updates; seq++) {
    const due = w0 + ((seq - 1) * 1000) / RATE;
    await sleep(Math.max(0, due - Date.now()));
    sent.set(seq, wallMs());
    await writer.update("mark", { seq });
    if (seq % (RATE * 10) === 0) say(`${seq}/${updates} updates`);
  }
  return sent;
}

/** A child's `report`: per mark `[mark, followers that got it, when the last did]`. */
export type Report = { marks: Array<[number, number, number]>; hashes: Record<string, number> };

/**
 * Per sent mark, ms from its `update()` until the last of `total` followers got it (marks no
 * follower got have none), and the receipts missing (`lost`).
 */
export function latenciesOf(
  reports: Report[],
  sent: Map<number, number>,
  total: number,
): { latencies: number[]; lost: number } {
  const perMark = new Map<number, { count: number; last: number }>();
  for (const r of reports) {
    for (const [mark, count, last] of r.marks) {
      const p = perMark.get(mark) ?? { count: 0, last: 0 };
      p.count += count;
      p.last = Math.max(p.last, last);
      perMark.set(mark, p);
    }
  }
  const latencies: number[] = [];
  let lost = 0;
  for (const [seq, t] of sent) {
    const p = perMark.get(seq);
    lost += total - (p?.count ?? 0);
    if (p) latencies.push(p.last - t);
  }
  return { latencies, lost };
}

/** Stops every child (waiting up to 30 s for each to close its connections), then kills it. */
export async function stopChildren(children: Child[]): Promise<void> {
  for (const c of children) c.send({ type: "stop" });
  await Promise.all(
    children.map((c) => Promise.race([c.exited, sleep(30_000)]).then(() => c.kill())),
  );
}
