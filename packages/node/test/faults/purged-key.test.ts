import { describe, expect, it } from "vitest";
import path from "node:path";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { openSynchronizer, stateHash, type StateSyncError } from "@statesync/node";
import { tcp, uniqueStream, useNatsServer } from "../helpers.js";
import { counter } from "../support/models.js";

/**
 * Found by a fresh-eyes trial (stop 9): an operator purged one key of a shared stream; reopening
 * that key failed `TRUNCATED: the log no longer holds the entries after revision 0 (latest: 0)`.
 * The genesis entry's message id is the same for every opener of a model (so concurrent openers
 * deduplicate), and within the duplicate window the server answered the new genesis as a
 * duplicate of the purged one. A purged key now starts again from a new genesis entry.
 */
describe("a key of a shared stream purged by an operator (real nats-server)", () => {
  const ctx = useNatsServer();

  it("reopens from a new genesis entry; two openers at once agree on one", async () => {
    const stream = uniqueStream("SHP");
    const where = { stream, key: "k1", servers: ctx.server.url, snapshots: false as const };
    const a = await openSynchronizer({ ...where, model: counter });
    await a.update("increment", { by: 5 });
    await a.close();
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.purge(stream, { filter: `${stream}.k1` });
    await nc.close();
    const [b, c] = await Promise.all([
      openSynchronizer({ ...where, model: counter }),
      openSynchronizer({ ...where, model: counter }),
    ]);
    expect(b.state).toEqual(counter.initial);
    await b.update("increment", { by: 1 });
    await c.waitFor(b.revision);
    expect(c.state).toEqual({ count: 1, seen: [] });
    const kinds = (await c.history()).map((h) => h.kind);
    expect(kinds).toEqual(["genesis", "update"]);
    await Promise.all([b.close(), c.close()]);
  });

  // Found by a fresh-eyes trial (stop 17): a replica that had read the key before the purge, live
  // or restarted from its local snapshot, skipped the new genesis entry as "a second genesis
  // entry" and applied every later entry on top of its old state: at one revision it held
  // another state than a fresh replica, and its own updates failed there.
  for (const how of ["live across the purge", "restarted from its local snapshot"] as const) {
    it(`a replica that read the key before the purge (${how}) starts again from the new genesis`, async () => {
      const stream = uniqueStream("SHPL");
      const snapshotDir = await mkdtemp(path.join(tmpdir(), "purged-key-"));
      try {
        const where = { stream, key: "k1", servers: ctx.server.url, model: counter };
        const errors: StateSyncError[] = [];
        const aOptions = {
          ...where,
          snapshotDir: path.join(snapshotDir, "a"),
          onError: (e: StateSyncError) => errors.push(e),
        };
        let a = await openSynchronizer(aOptions);
        await a.update("increment", { by: 5 });
        if (how === "restarted from its local snapshot") await a.close();
        const nc = await tcp(ctx.server.url);
        await (await nc.jetstreamManager()).streams.purge(stream, { filter: `${stream}.k1` });
        await nc.close();
        const b = await openSynchronizer({ ...where, snapshots: false });
        await b.update("increment", { by: 1 });
        if (how === "restarted from its local snapshot") {
          a = await openSynchronizer(aOptions);
          expect(a.stats.snapshotsRestored).toBe(1);
        }
        await a.waitFor(b.revision);
        expect(a.revision).toBe(b.revision);
        expect(a.state).toEqual({ count: 1, seen: [] });
        expect(stateHash(a.state)).toBe(stateHash(b.state));
        expect(errors.map((e) => e.code)).toContain("TRUNCATED");
        // Its updates apply alike everywhere.
        const { revision } = await a.update("increment", { by: 10 });
        await b.waitFor(revision);
        expect(b.state).toEqual({ count: 11, seen: [] });
        expect(stateHash(a.state)).toBe(stateHash(b.state));
        await Promise.all([a.close(), b.close()]);
      } finally {
        await rm(snapshotDir, { recursive: true, force: true });
      }
    });
  }
});
