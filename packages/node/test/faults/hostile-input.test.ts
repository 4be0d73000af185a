import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type JetStreamClient, type NatsConnection } from "nats";
import { startNatsServer, stateHash, type NatsServer, type StateSyncError } from "@statesync/node";
import { uniqueStream, until } from "../helpers.js";
import type { LedgerSync } from "../support/checker.js";
import { openLedger } from "../support/workload.js";
import type { HostileCase } from "../fixtures/hostile/ledger-model.js";

/**
 * The hostile-input corpus (fixtures/hostile/manifest.json, written by generate.mjs): raw
 * messages another program publishes on a state's subject. Two Node replicas, one live while the
 * case arrives and one joining later, must treat each case the same way, the way the manifest
 * says, and never crash.
 */
const manifest = JSON.parse(
  readFileSync(new URL("../fixtures/hostile/manifest.json", import.meta.url), "utf8"),
) as { marker: string; cases: HostileCase[] };

let server: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  js = nc.jetstream();
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));
const INITIAL = { count: 0, ops: [], notes: [] };

/** A replica and the error events it reported. */
type Watched = LedgerSync & { errors: StateSyncError[] };

async function openWatched(stream: string, waitFor: "synced" | "restored"): Promise<Watched> {
  const errors: StateSyncError[] = [];
  const sync = await openLedger({
    servers: server.url,
    stream,
    waitFor,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

/** Waits until the replica consumed the marker (revision 3) or stalled. */
function settled(r: LedgerSync): Promise<true> {
  return until(() => (r.revision >= 3 || r.status === "stalled" ? true : undefined), 20_000);
}

function checkReplica(r: Watched, c: HostileCase): void {
  const at2 = r.errors.filter((e) => e.details.revision === 2).map((e) => e.code);
  if (c.expected.startsWith("stall:")) {
    expect(r.status).toBe("stalled");
    expect(r.stallReason?.code).toBe(c.expected.slice("stall:".length));
    expect(r.revision).toBe(1);
    expect(r.state).toEqual(INITIAL);
    return;
  }
  expect(r.status).toBe("live");
  expect(r.revision).toBe(3);
  if (c.expected === "skipped") {
    expect(at2).toEqual([c.reported ?? "CORRUPT_ENTRY"]);
    expect(r.state).toEqual({ ...INITIAL, notes: ["after"] });
    expect(r.stats.entriesSkipped).toBeGreaterThanOrEqual(1);
  } else {
    expect(c.expected).toBe("applied");
    expect(at2).toEqual(c.reported ? [c.reported] : []);
    if (c.state !== undefined) expect(r.state).toEqual(c.state);
    if (c.stateHash !== undefined) expect(stateHash(r.state)).toBe(c.stateHash);
  }
}

describe("hostile and malformed entries published by another program", () => {
  it("the corpus covers every outcome", () => {
    const outcomes = new Set(manifest.cases.map((c) => c.expected));
    for (const o of ["skipped", "applied", "stall:UNSUPPORTED_FORMAT", "stall:UNKNOWN_COMMAND"]) {
      expect(outcomes).toContain(o);
    }
    expect(manifest.cases.length).toBeGreaterThanOrEqual(40);
    expect(new Set(manifest.cases.map((c) => c.name)).size).toBe(manifest.cases.length);
  });

  // Four cases at a time: each on its own stream with its own two replicas.
  const batches: HostileCase[][] = [];
  for (let i = 0; i < manifest.cases.length; i += 4) batches.push(manifest.cases.slice(i, i + 4));
  for (const batch of batches) {
    it(`live and late replicas agree: ${batch.map((c) => c.name).join(", ")}`, async () => {
      await Promise.all(
        batch.map(async (c) => {
          const stream = uniqueStream("HOSTILE");
          const live = await openWatched(stream, "synced");
          let late: Watched | undefined;
          try {
            expect(live.revision).toBe(1);
            const subject = `${stream}.log`;
            const ack = await js.publish(subject, b64(c.payload), { msgID: `hostile-${c.name}` });
            expect(ack.seq, c.name).toBe(2);
            await js.publish(subject, b64(manifest.marker), { msgID: "marker" });
            await settled(live);
            late = await openWatched(stream, "restored");
            await settled(late);
            for (const r of [live, late]) {
              try {
                checkReplica(r, c);
              } catch (e) {
                throw new Error(`${c.name} (${c.description}): ${String(e)}`, { cause: e });
              }
            }
            expect(late.revision).toBe(live.revision);
            expect(late.status).toBe(live.status);
            expect(stateHash(late.state)).toBe(stateHash(live.state));
          } finally {
            await Promise.all([live.close(), late?.close()]);
          }
        }),
      );
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    });
  }
});
