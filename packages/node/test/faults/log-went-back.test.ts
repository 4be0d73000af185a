import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream, until } from "../helpers.js";
import { counter } from "../support/models.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/**
 * Found by a fresh-eyes trial (stop 17): the server lost its last acknowledged appends (its store
 * restored to an older copy, as after a power loss without fsync) while a replica was live. The
 * replica reconnected with no event, stayed `live` and writable, ignored the log's new entries at
 * the revisions it held, applied the later ones on its own state, and its conditional update on
 * that state was accepted. Now a reconnection checks that the log still holds the entry the
 * replica applied last, and a log that went back stalls the replica with `LOG_REPLACED`.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/** Stops the server, copies its store aside (or back), starts it again on the same store. */
async function withStore(action: (store: string) => Promise<void>): Promise<void> {
  await server.stop({ keepStore: true });
  await action(server.storeDir);
  await server.restart();
}

describe("a log that went back under a live replica (real nats-server)", () => {
  for (const how of ["behind the replica", "past it with other entries"] as const) {
    it(`stalls the replica with LOG_REPLACED when the log is ${how}`, async () => {
      const stream = uniqueStream("REWOUND");
      const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
      const a = await openSynchronizer({
        servers: proxy.url,
        stream,
        model: counter,
        snapshots: false,
      });
      const backup = await mkdtemp(path.join(tmpdir(), "rewound-"));
      try {
        for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
        await withStore((store) => cp(store, backup, { recursive: true }));
        await a.synced();
        for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
        expect(a.revision).toBe(8);
        proxy.setRefusing(true);
        proxy.cutAll();
        await withStore(async (store) => {
          await rm(store, { recursive: true, force: true });
          await cp(backup, store, { recursive: true });
        });
        if (how === "past it with other entries") {
          const b = await openSynchronizer({
            servers: server.url,
            stream,
            model: counter,
            snapshots: false,
          });
          expect(b.revision).toBe(4);
          for (let i = 0; i < 6; i++) await b.update("increment", { by: 10 });
          await b.close();
        }
        proxy.setRefusing(false);
        await until(() => a.status === "stalled" || undefined, 20_000);
        expect(a.stallReason?.code).toBe("LOG_REPLACED");
        expect(a.stallReason?.details).toMatchObject({ rewound: true, revision: 8 });
        expect(a.writable).toBe(false);
        expect(a.state.count).toBe(7); // the last state it had, kept for reads
        await expect(a.update("increment", { by: 1 })).rejects.toMatchObject({
          code: "LOG_REPLACED",
        });
      } finally {
        await a.close();
        await proxy.stop();
        await rm(backup, { recursive: true, force: true });
      }
    });
  }
});

describe("a reconnection check the log does not answer (real nats-server)", () => {
  it("holds the rewound log's entries until it answers, then stalls LOG_REPLACED", async () => {
    // A helper's trial (stop 23): the server's answers to the check's point read were lost for
    // 3 s; the check timed out, its failure released the held entries, and the replica went on
    // `live` on the rewound log (count 67 instead of 7).
    const stream = uniqueStream("UNCHECKED");
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port }, { parse: true });
    const a = await openSynchronizer({
      servers: proxy.url,
      stream,
      model: counter,
      snapshots: false,
      requestTimeoutMs: 1_000,
    });
    const errors: string[] = [];
    a.on("error", (e) => errors.push(e.code));
    const backup = await mkdtemp(path.join(tmpdir(), "unchecked-"));
    try {
      for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
      await withStore((store) => cp(store, backup, { recursive: true }));
      await a.synced();
      for (let i = 0; i < 4; i++) await a.update("increment", { by: 1 });
      expect(a.revision).toBe(8);
      proxy.setRefusing(true);
      proxy.cutAll();
      await withStore(async (store) => {
        await rm(store, { recursive: true, force: true });
        await cp(backup, store, { recursive: true });
      });
      const b = await openSynchronizer({
        servers: server.url,
        stream,
        model: counter,
        snapshots: false,
      });
      for (let i = 0; i < 6; i++) await b.updateUnconditionally("increment", { by: 10 });
      await b.close();
      proxy.dropDelivered((_subject, frame) => frame.includes("stream_msg_get_response"));
      proxy.setRefusing(false);
      await until(() => proxy.dropped > 0 || undefined, 20_000);
      await new Promise((r) => setTimeout(r, 3_000));
      expect(a.state.count).toBe(7); // held: the check has not answered
      expect(a.status).toBe("offline");
      expect(errors).toContain("UNAVAILABLE"); // the unanswered check, reported
      proxy.dropDelivered(undefined);
      await until(() => a.status === "stalled" || undefined, 20_000);
      expect(a.stallReason?.code).toBe("LOG_REPLACED");
      expect(a.state.count).toBe(7);
      expect(a.revision).toBe(8);
    } finally {
      await a.close();
      await proxy.stop();
      await rm(backup, { recursive: true, force: true });
    }
  });
});
