// A follower tab under a leading tab of the previous version of the app (a rolling deploy: old
// and new tabs open at once). That leader beats `{ t, from, epoch, online }` only and posts no
// `config` messages: it knows neither. Before, its beats read as a leader's whose log watches its
// configuration (no `unwatched`), so the follower's replica stopped polling and never heard of
// an operator's change while that tab led; the follower of the previous version polled.
import type { LogConfigWatcher, StateSyncError } from "@statesync/browser";
import { afterEach, expect, it } from "vitest";
import { followerOf, originName, RawTab, until } from "./support/raw-tab.js";

const closing: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

it("a leader of the previous version: the follower's configuration watcher hears onUnavailable (its replica polls)", async () => {
  const leader = new RawTab(originName("older-leader"));
  leader.lead(); // beats as the previous version did
  closing.push(() => leader.close());
  const follower = await followerOf(leader);
  closing.push(() => follower.close());
  await until(() => follower.followsAnother && follower.status === "online");
  const seen: string[] = [];
  const watcher: LogConfigWatcher = {
    onChange: () => seen.push("change"),
    onUnavailable: (e) => seen.push(`unavailable ${(e as StateSyncError).code}`),
  };
  follower.watchConfig(watcher);
  await until(() => seen.some((s) => s.startsWith("unavailable")));
  expect(seen.filter((s) => s.startsWith("unavailable"))).toEqual(["unavailable UNAVAILABLE"]);
});
