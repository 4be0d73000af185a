import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream, until } from "../helpers.js";
import { History } from "../support/checker.js";
import {
  killAllClients,
  startClientProcess,
  type ClientProcessOptions,
} from "../support/client-process.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * A client process (`child_process.fork` of support/ledger-client.mjs) is killed with SIGKILL in
 * the middle of its updates, and in the middle of writing its disk snapshot; restarted on the
 * same snapshot directory, it recovers and converges with everyone else.
 */
let server: NatsServer;
let dir: string;
beforeAll(async () => {
  server = await startNatsServer();
  dir = await mkdtemp(path.join(tmpdir(), "statesync-crash-"));
});
afterAll(async () => {
  killAllClients();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Complete snapshot files in `dir` (not the temporary files of a write in progress). */
async function snapshotFiles(dir: string): Promise<string[]> {
  const files = await readdir(dir).catch(() => []);
  return files.filter((f) => f.endsWith(".snapshot.json"));
}

function startClient(history: History, options: Omit<ClientProcessOptions, "servers">) {
  return startClientProcess(history, { servers: server.url, ...options });
}

describe("a client process killed with SIGKILL", () => {
  it("in the middle of its updates: restarted, it recovers from its disk snapshot and converges", async () => {
    const stream = uniqueStream("CRASH");
    const snapshotDir = path.join(dir, stream);
    const history = new History();
    const reference = await openLedger({ servers: server.url, stream, clientId: "ref" });
    const parent = await openLedger({ servers: server.url, stream, clientId: "p" });
    closeAtEnd(reference, parent);
    history.watch("ref", reference);
    history.watch("p", parent);
    const workload = startWorkload(history, [
      { name: "p", sync: parent, kind: "conditional", pauseMs: 10 },
    ]);
    try {
      const first = startClient(history, {
        stream,
        clientId: "c",
        incarnation: 1,
        snapshotDir,
        ops: 0,
      });
      expect((await first.ready).restored).toBe(0);
      await first.waitForOutcomes(15);
      // Snapshots are written behind the updates (at most one save every 250 ms, each a write
      // and a rename): on a loaded machine 15 outcomes came before the first file did, and the
      // restart then had nothing to restore. Kill once one is on disk, so there is.
      await until(async () => ((await snapshotFiles(snapshotDir)).length > 0 ? true : undefined));
      await first.kill(); // with an update in flight: its outcome stays unknown

      const second = startClient(history, {
        stream,
        clientId: "c",
        incarnation: 2,
        snapshotDir,
        ops: 15,
      });
      const ready = await second.ready;
      expect(ready.restored).toBe(1);
      expect(ready.revision).toBeGreaterThan(1);
      expect(await second.exited).toBe(0);
      expect(second.errors).toEqual([]);
    } finally {
      await workload.stop();
    }
    const verdict = await verify(history, { ref: reference, p: parent });
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(30);
    // The first incarnation's last invoked update was in flight when it died.
    const pending = history.ops.filter((o) => o.client === "c#1" && o.outcome === undefined);
    expect(pending.length).toBeLessThanOrEqual(1);
    await Promise.all([reference.close(), parent.close()]);
  });

  it("in the middle of writing its disk snapshot: the torn write is ignored, it recovers and converges", async () => {
    const stream = uniqueStream("TORN");
    const snapshotDir = path.join(dir, stream);
    const history = new History();
    const reference = await openLedger({ servers: server.url, stream, clientId: "ref" });
    closeAtEnd(reference);
    history.watch("ref", reference);
    const first = startClient(history, {
      stream,
      clientId: "c",
      incarnation: 1,
      snapshotDir,
      ops: 20,
      crashInSnapshotWrite: true,
    });
    await first.midWrite;
    await first.kill();
    const files = await readdir(snapshotDir);
    const torn = files.filter((f) => f.endsWith(".7042e000.tmp"));
    expect(torn).toHaveLength(1);

    const second = startClient(history, {
      stream,
      clientId: "c",
      incarnation: 2,
      snapshotDir,
      ops: 10,
    });
    const ready = await second.ready;
    expect(ready.restored).toBe(1); // the last complete snapshot, not the torn one
    expect(await second.exited).toBe(0);
    expect(second.errors).toEqual([]);
    // The restarted client's first save removed the dead process's temporary file.
    expect((await readdir(snapshotDir)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    const verdict = await verify(history, { ref: reference });
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(18);
    await reference.close();
  });
});
