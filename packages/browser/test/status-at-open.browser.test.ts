// What a page's replica says while it opens (SyncStatus: `offline` means the log cannot be
// reached). A new user's trial: with tabs on (the default) and `snapshots: false`, the first
// status a page opened against a live server reported was `offline`, then `live`, so a
// `useSyncStatus` UI said "offline" for a moment on every load. Nothing had failed: the tab was
// still electing its leader, or a follower had not heard the leading tab yet. Every path is
// checked here: no tabs, the leading tab, a follower tab, tabs opening together, with and
// without a snapshot store and an offline queue; and a server that is down still says
// `offline` from its refused WebSocket alone. The same kind at a handover: the leading tab
// closes and another takes the lead over (more cases, with fake tabs: tab-handover-status.test.ts).
import { jetStreamSnapshotKey, openSynchronizer, type SyncStatus } from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { afterEach, expect, inject, it, vi } from "vitest";
import { notes as model } from "./support/models.js";

type Options = Partial<
  Parameters<typeof openSynchronizer<typeof model.initial, typeof model.commands>>[0]
>;

const LIVE = inject("natsWsUrl");
// No server listens here: its WebSocket is refused.
const NOBODY = "ws://127.0.0.1:9";

let streams = 0;
const uniqueStream = () => `status_open_${Date.now()}_${++streams}`;
const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

/** Opens a replica recording every status it reports, from the first. */
async function open(stream: string, options: Options) {
  const seen: SyncStatus[] = [];
  const sync = await openSynchronizer({
    servers: LIVE,
    stream,
    model,
    onStatus: (s) => seen.push(s),
    ...options,
  });
  closing.push(() => sync.close());
  return { sync, seen };
}

/** Waits until the replica is live; its statuses until then never said `offline`. */
async function liveWithoutOffline(r: { sync: { status: SyncStatus }; seen: SyncStatus[] }) {
  await vi.waitFor(() => expect(r.seen).toContain("live"), { timeout: 20_000 });
  const before = r.seen.slice(0, r.seen.indexOf("live"));
  expect(before).not.toContain("offline");
  expect(before.every((s) => s === "connecting")).toBe(true);
}

const variants: Array<[string, Options]> = [
  ["no tabs, no snapshots", { tabs: false, snapshots: false }],
  ["no tabs, default snapshots", { tabs: false }],
  ["tabs, no snapshots", { snapshots: false }],
  ["tabs, default snapshots", {}],
  [
    "tabs, no snapshots, an offline queue",
    { snapshots: false, pending: offlineQueue({ owner: "s" }) },
  ],
];

for (const [name, options] of variants) {
  it(`a page opened against a live server says live, never offline first: ${name}`, async () => {
    await liveWithoutOffline(await open(uniqueStream(), options));
  });
}

it("a follower tab opened beside a live leading tab never says offline first", async () => {
  for (const snapshots of [false, undefined] as const) {
    const stream = uniqueStream();
    const leader = await open(stream, { snapshots });
    await liveWithoutOffline(leader);
    const follower = await open(stream, { snapshots });
    await liveWithoutOffline(follower);
    expect(follower.seen.slice(follower.seen.indexOf("live"))).not.toContain("offline");
  }
});

it("tabs opening together never say offline first, whichever leads", async () => {
  const stream = uniqueStream();
  const tabs = await Promise.all([1, 2, 3].map(() => open(stream, { snapshots: false })));
  for (const tab of tabs) await liveWithoutOffline(tab);
});

it("a page opened while the server is down still says offline from the refused WebSocket, in every path", async () => {
  // With a request timeout of 10 minutes, only a refused connection can make a replica offline
  // within the test's time: a follower's through the leading tab's beats.
  const down = { servers: NOBODY, snapshots: false as const, requestTimeoutMs: 600_000 };
  const stream = uniqueStream();
  const alone = await open(stream, { ...down, tabs: false });
  const leader = await open(stream, down);
  const follower = await open(stream, down);
  for (const r of [alone, leader, follower]) {
    await vi.waitFor(() => expect(r.seen).toContain("offline"), { timeout: 20_000 });
    expect(r.seen).not.toContain("live");
  }
});

it("a page opened after the leading tab crashed (its token left behind) never says offline first", async () => {
  const stream = uniqueStream();
  // What a crashed leader leaves: its token, naming a tab that will never beat again.
  const name = `statesync:${LIVE}:${jetStreamSnapshotKey({ stream })}`;
  localStorage.setItem(name, "7:crashed-tab");
  await liveWithoutOffline(await open(stream, { snapshots: false }));
});

it("the tabs never say offline while the leading tab closes and another takes the lead over", async () => {
  // The same kind as at open: the leader's `bye` made every other tab say `offline` until the
  // next leader's connection was made, though nothing had failed (tab-status.ts).
  for (const snapshots of [false, undefined] as const) {
    const stream = uniqueStream();
    const leader = await open(stream, { snapshots });
    await liveWithoutOffline(leader);
    const followers = [await open(stream, { snapshots }), await open(stream, { snapshots })];
    for (const f of followers) await liveWithoutOffline(f);
    const from = followers.map((f) => f.seen.length);
    await leader.sync.close();
    // Written through the next leader's connection, and read by the other tab through it.
    const { revision } = await followers[0]!.sync.update("add", { text: "after the handover" });
    await followers[1]!.sync.waitFor(revision);
    await followers[1]!.sync.update("add", { text: "and from the other" });
    followers.forEach((f, i) => expect(f.seen.slice(from[i])).not.toContain("offline"));
    expect(followers.map((f) => f.sync.status)).toEqual(["live", "live"]);
  }
});
