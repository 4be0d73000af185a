import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, sleep, startWorkload, verify } from "../support/workload.js";

/**
 * nats-server crashes (SIGKILL) and restarts on the same store, or stops (SIGSTOP) for longer
 * than every client timeout and resumes (SIGCONT), while clients keep updating.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.kill("SIGCONT").catch(() => undefined);
  await server?.stop();
});

async function openClients(stream: string, names: string[]): Promise<Record<string, LedgerSync>> {
  const entries = await Promise.all(
    names.map(async (name) => [
      name,
      await openLedger({ servers: server.url, stream, clientId: name }),
    ]),
  );
  const replicas = Object.fromEntries(entries) as Record<string, LedgerSync>;
  closeAtEnd(...Object.values(replicas));
  return replicas;
}

describe("nats-server crashes and stops", () => {
  it("SIGKILL and restart on the same store, twice, while 3 clients update: nothing lost", async () => {
    const stream = uniqueStream("KILL");
    const replicas = await openClients(stream, ["a", "b", "c"]);
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(
      history,
      [
        { name: "a", sync: replicas.a!, kind: "conditional" },
        { name: "b", sync: replicas.b!, kind: "conditional" },
        { name: "c", sync: replicas.c!, kind: "mixed" },
      ],
      { update: { outcomeTimeoutMs: 4_000 } },
    );
    try {
      for (let crash = 0; crash < 2; crash++) {
        await workload.waitForOk(20);
        await server.kill("SIGKILL");
        await sleep(300); // clients fail over to retries while nothing listens
        await server.restart();
      }
      await workload.waitForOk(20);
    } finally {
      await workload.stop();
    }
    const verdict = await verify(history, replicas);
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(60);
    expect(history.reported.filter((e) => e.code !== "UNAVAILABLE")).toEqual([]);
    await Promise.all(Object.values(replicas).map((r) => r.close()));
  });

  it("SIGSTOP longer than the client timeouts, then SIGCONT: late appends land at most once", async () => {
    const stream = uniqueStream("STOP");
    const replicas = await openClients(stream, ["a", "b", "c"]);
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(
      history,
      [
        { name: "a", sync: replicas.a!, kind: "conditional" },
        { name: "b", sync: replicas.b!, kind: "unconditional" },
        { name: "c", sync: replicas.c!, kind: "mixed" },
      ],
      // Requests time out after 2 s; an update gives up after 1.5 s: well inside the 4 s stop.
      { update: { outcomeTimeoutMs: 1_500 } },
    );
    try {
      await workload.waitForOk(20);
      await server.kill("SIGSTOP");
      await sleep(4_000);
      await server.kill("SIGCONT");
      await workload.waitForOk(20);
    } finally {
      await server.kill("SIGCONT").catch(() => undefined);
      await workload.stop();
    }
    const verdict = await verify(history, replicas);
    const unknown = Object.entries(history.summary()).filter(([k]) => k.startsWith("unknown"));
    expect(unknown.length, JSON.stringify(history.summary())).toBeGreaterThan(0);
    expect(verdict.stats.unknown).toBeGreaterThanOrEqual(3);
    await Promise.all(Object.values(replicas).map((r) => r.close()));
  });
});
