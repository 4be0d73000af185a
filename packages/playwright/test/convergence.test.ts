import { describe, expect, it } from "vitest";
import { isStateSyncError, type StateSynchronizer } from "@statesync/core";
import { probe, waitForConvergence, type SyncClient } from "@statesync/playwright";

/**
 * `waitForConvergence`'s arguments are checked (zod) before it polls. Before, `[]` waited out
 * the timeout and said "replicas did not converge", `atLeast: NaN` could never be reached, and
 * `intervalMs: Infinity` polled every 1 ms with a TimeoutOverflowWarning each time.
 */

/** A Node replica stand-in: what `probeSynchronizer` reads. */
function replica(clientId: string, revision: number, n = revision): SyncClient {
  return {
    clientId,
    revision,
    status: "synced",
    state: { n },
    stats: {},
    on: () => () => undefined,
  } as unknown as StateSynchronizer<any, any>;
}

/** The error `waitForConvergence` rejects with, within `ms`. */
async function refusal(clients: unknown, options?: unknown, ms = 1_000): Promise<unknown> {
  const started = Date.now();
  const error = await waitForConvergence(clients as SyncClient[], options as object).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(Date.now() - started).toBeLessThan(ms);
  return error;
}

describe("waitForConvergence: bad arguments are VALIDATION, at once", () => {
  const two = [replica("a", 3), replica("b", 3)];

  it("an empty list of clients", async () => {
    const error = await refusal([], { timeoutMs: 2_000 });
    expect(isStateSyncError(error, "VALIDATION"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^invalid waitForConvergence clients: .*at least one/s,
    );
  });

  it.each([
    ["atLeast", { atLeast: Number.NaN, timeoutMs: 2_000 }],
    ["atLeast", { atLeast: -1 }],
    ["atLeast", { atLeast: 1.5 }],
    ["intervalMs", { atLeast: 10, intervalMs: Number.POSITIVE_INFINITY, timeoutMs: 2_000 }],
    ["intervalMs", { intervalMs: 0 }],
    ["intervalMs", { intervalMs: 2 ** 31 }],
    ["timeoutMs", { timeoutMs: Number.NaN }],
    ["timeoutMs", { timeoutMs: -5 }],
    ["timeoutMs", { timeoutMs: Number.POSITIVE_INFINITY }],
    ["timeout", { timeout: 100 }],
  ])("%s in %o", async (name, options) => {
    const error = await refusal(two, options);
    expect(isStateSyncError(error, "VALIDATION"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^invalid waitForConvergence options: /);
    expect((error as Error).message).toContain(name);
  });

  it.each([
    ["not an array", replica("a", 1)],
    ["a missing client", [replica("a", 1), undefined]],
    ["a client of another kind", [replica("a", 1), { revision: 1 }]],
  ])("clients: %s", async (_, clients) => {
    const error = await refusal(clients, { timeoutMs: 2_000 });
    expect(isStateSyncError(error, "VALIDATION"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^invalid waitForConvergence clients: /);
  });

  it("options null is VALIDATION; undefined is the defaults", async () => {
    const error = await refusal(two, null);
    expect(isStateSyncError(error, "VALIDATION"), String(error)).toBe(true);
    await expect(waitForConvergence(two, undefined)).resolves.toMatchObject({ revision: 3 });
  });
});

describe("waitForConvergence: good arguments", () => {
  it("returns the common revision and hash, once at least atLeast", async () => {
    const found = await waitForConvergence([replica("a", 4), replica("b", 4)], {
      atLeast: 4,
      intervalMs: 10,
      timeoutMs: 1_000,
    });
    expect(found.revision).toBe(4);
    expect(found.hash).toMatch(/\S/);
  });

  it("still says when replicas do not converge in time (a plain Error listing them)", async () => {
    const error = await refusal([replica("a", 1), replica("b", 2)], { timeoutMs: 100 }, 2_000);
    expect(isStateSyncError(error)).toBe(false);
    expect((error as Error).message).toMatch(/^replicas did not converge within 100 ms:/);
    // Each line says which client it is (before: only "#0", "#1").
    expect((error as Error).message).toContain("#0 Node replica a: revision 1");
    expect((error as Error).message).toContain("#1 Node replica b: revision 2");
  });
});

describe("probe: its argument is checked as waitForConvergence's clients are", () => {
  // Before: probe(null) and probe("x") threw a bare TypeError, probe({}) "not a JSON value".
  it.each([
    ["null", null],
    ["a string", "x"],
    ["an empty object", {}],
    ["{ page } without a page", { page: {}, name: "alice" }],
  ])("%s is VALIDATION", async (_, client) => {
    const error = await probe(client as SyncClient).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(error, "VALIDATION"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^invalid probe client: /);
  });

  it("a replica is probed", async () => {
    await expect(probe(replica("a", 7))).resolves.toMatchObject({ clientId: "a", revision: 7 });
  });
});
