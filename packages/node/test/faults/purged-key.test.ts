import { describe, expect, it } from "vitest";
import { openSynchronizer } from "@statesync/node";
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
});
