import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, stateHash, type NatsServer } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { checkHistory, History, type LedgerSync } from "../support/checker.js";
import {
  killAllClients,
  startClientProcess,
  type ClientProcess,
} from "../support/client-process.js";
import { openLedger, settle, sleep } from "../support/workload.js";

/**
 * The soak test (`npm run soak`; not part of `npm test`): 32 client processes share one state for
 * SOAK_SECONDS (default 150), mixing conditional and unconditional increments, with automatic
 * compaction. Each reports its heap after a forced GC (`--expose-gc`) every few seconds. At the
 * end: the history checker passes, every replica converged, no error went unreported (every
 * failed operation and every "error" event is counted and printed; none is unexpected), and
 * each client's heap stayed bounded. Prints a summary.
 */
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 32);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 150);
/** Heap growth allowed per client from its first sample after warm-up to its last, bytes. */
const HEAP_GROWTH_LIMIT = 24 * 1024 * 1024;
/** Error codes a healthy run may show: contention (RETRY_LIMIT) and compaction races. */
const EXPECTED_FAILURES = new Set(["RETRY_LIMIT"]);

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  killAllClients();
  await server?.stop();
});

const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

describe("soak", () => {
  it(`${CLIENTS} client processes for ${SECONDS} s: checker passes, heaps bounded, every error reported`, async () => {
    const stream = uniqueStream("SOAK");
    const history = new History();
    const reference: LedgerSync = await openLedger({
      servers: server.url,
      stream,
      clientId: "ref",
    });
    history.watch("ref", reference, { hashEvery: 200 });
    const started = Date.now();
    const clients: ClientProcess[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      clients.push(
        startClientProcess(
          history,
          {
            servers: server.url,
            stream,
            clientId: `c${String(i).padStart(2, "0")}`,
            incarnation: 1,
            ops: 0,
            durationMs: SECONDS * 1000,
            pauseMs: [100, 500],
            unconditionalEvery: 2,
            compaction: { everyEntries: 1_500, jitter: 0.5 },
            hashEvery: 50,
            heapEveryMs: 5_000,
          },
          ["--expose-gc"],
        ),
      );
    }
    await Promise.all(clients.map((c) => c.ready));
    // Periodic compaction besides the clients' automatic one (every 1,500 entries or so).
    const compactions: string[] = [];
    const compactor = setInterval(() => {
      reference.compact().then(
        (r) => compactions.push(`ok@${r.revision}`),
        (e: { code?: string }) => compactions.push(e.code ?? String(e)),
      );
    }, 15_000);
    const codes = await Promise.all(clients.map((c) => c.exited));
    clearInterval(compactor);
    const elapsed = (Date.now() - started) / 1000;
    await settle([reference], 60_000);
    const late: LedgerSync = await openLedger({ servers: server.url, stream, clientId: "late" });

    const verdict = checkHistory({
      ops: history.ops,
      replicas: [
        { client: "ref", revision: reference.revision, state: reference.state as never },
        { client: "late", revision: late.revision, state: late.state as never },
      ],
      observations: history.observations,
    });

    // Heaps: warm-up is the first 30 s (6 samples); growth from then to the end.
    const heaps = clients.map((c) => {
      const base = c.heap[Math.min(6, c.heap.length - 1)] ?? 0;
      const last = c.heap.at(-1) ?? 0;
      return { id: c.observer, base, last, max: Math.max(...c.heap), growth: last - base };
    });
    const growths = heaps.map((h) => h.growth).sort((a, b) => a - b);
    const summary = history.summary();
    const failures = Object.entries(summary).filter(([k]) => k !== "ok");
    const reported = new Map<string, number>();
    for (const e of history.reported) reported.set(e.code, (reported.get(e.code) ?? 0) + 1);
    const stats = clients.map((c) => c.done?.stats ?? {});
    const sum = (k: string) => stats.reduce((n, s) => n + (s[k] ?? 0), 0);
    const logInfo = await reference.history();
    const percentiles = (kind: "conditional" | "unconditional") => {
      const all = clients.flatMap((c) => c.latency[kind]).sort((a, b) => a - b);
      const at = (q: number) => all[Math.min(all.length - 1, Math.floor(all.length * q))] ?? 0;
      return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${all.at(-1) ?? 0} ms`;
    };

    console.log(
      [
        `soak: ${CLIENTS} clients, ${elapsed.toFixed(0)} s, final revision ${reference.revision}`,
        `operations: ${history.ops.length} (${(history.ops.length / elapsed).toFixed(1)}/s); outcomes ${JSON.stringify(summary)}`,
        `applied: ${verdict.stats.applied}; unknown outcomes that landed: ${verdict.stats.unknownApplied}; observations checked: ${verdict.stats.observations}`,
        `engine: appends ${sum("appends")}, conflicts ${sum("conflicts")}, attempts ${sum("attempts")}, resends ${sum("resends")}, automatic compactions ${sum("compactions")}, entries skipped ${sum("entriesSkipped")}`,
        `periodic compactions: ${compactions.join(", ") || "none"}`,
        `latency, invocation to outcome: conditional ${percentiles("conditional")}; unconditional ${percentiles("unconditional")}`,
        `log now: ${logInfo.length} entries from revision ${logInfo[0]?.revision} (${logInfo[0]?.kind}); state: ${mb(JSON.stringify(reference.state).length)} MB JSON, ${reference.state.ops.length} ops`,
        `"error" events: ${JSON.stringify(Object.fromEntries(reported))}`,
        `heap after GC, growth after warm-up: min ${mb(growths[0]!)} MB, median ${mb(growths[Math.floor(growths.length / 2)]!)} MB, max ${mb(growths.at(-1)!)} MB; largest heap ${mb(Math.max(...heaps.map((h) => h.max)))} MB`,
        `checker: ${verdict.ok ? "passed" : `FAILED\n  - ${verdict.violations.join("\n  - ")}`}`,
      ].join("\n"),
    );

    expect(codes).toEqual(clients.map(() => 0));
    expect(clients.flatMap((c) => c.fatal)).toEqual([]);
    expect(verdict.violations).toEqual([]);
    expect(stateHash(late.state)).toBe(stateHash(reference.state));
    for (const c of clients) expect(c.done?.hash, c.observer).toBeDefined();
    // Every operation ended, and every failure is one a healthy run may show.
    expect(history.ops.every((o) => o.outcome !== undefined)).toBe(true);
    for (const [key] of failures) {
      expect(EXPECTED_FAILURES.has(key.split(":")[1] ?? key), `unexpected outcome ${key}`).toBe(
        true,
      );
    }
    // Every "error" event is one the run expects: none but compaction hiccups reported as such.
    for (const code of reported.keys()) expect(["CONFLICT", "UNAVAILABLE"], code).toContain(code);
    // A periodic compaction races 32 busy writers on 2 cores; after three lost races it
    // announces itself like any writer and the others let it go first (issue 10, case 11), so
    // every one completes (before that, 6 of 9 failed RETRY_LIMIT and the log grew unbounded).
    expect(compactions.filter((c) => c.startsWith("ok")).length).toBeGreaterThan(0);
    expect(compactions.filter((c) => !c.startsWith("ok"))).toEqual([]);
    for (const h of heaps) {
      expect(h.growth, `${h.id}: heap ${mb(h.base)} -> ${mb(h.last)} MB`).toBeLessThan(
        HEAP_GROWTH_LIMIT,
      );
    }
    await Promise.all([reference.close(), late.close()]);
    await sleep(100);
  });
});
