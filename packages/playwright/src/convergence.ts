import type { Page } from "@playwright/test";
import { EXPOSED_GLOBAL, probeSynchronizer, type SyncProbe } from "@statesync/browser";
import type { StateSynchronizer } from "@statesync/core";

/**
 * A replica a test can read: a Node `StateSynchronizer`, a page whose app called
 * `exposeSynchronizer(sync)` (name `"default"`), or `{ page, name }` for another name.
 */
export type SyncClient = StateSynchronizer<any, any> | Page | { page: Page; name: string };

function isPage(client: unknown): client is Page {
  return typeof (client as Page).evaluate === "function" && "mainFrame" in (client as object);
}

/**
 * The probe of a client (revision, status, `stateHash` of the state, stats), or undefined while
 * a page has not exposed its replica yet (still loading, or reloading).
 */
export async function probe(client: SyncClient): Promise<SyncProbe | undefined> {
  if (!isPage(client) && !("page" in client)) return probeSynchronizer(client);
  const page = isPage(client) ? client : client.page;
  const name = isPage(client) ? "default" : client.name;
  try {
    return await page.evaluate(
      ([global, key]) => {
        const registry = (globalThis as Record<string, any>)[global];
        return registry?.[key]?.probe() as SyncProbe | undefined;
      },
      [EXPOSED_GLOBAL, name] as const,
    );
  } catch (err) {
    // A navigation destroyed the context between two polls: not exposed yet.
    if (/context was destroyed|navigat/i.test(String(err))) return undefined;
    throw err;
  }
}

/** Options of {@link waitForConvergence}. */
export interface ConvergenceOptions {
  /** Give up after this many ms (default 15,000). */
  timeoutMs?: number;
  /** Also wait until the common revision is at least this. */
  atLeast?: number;
  /** Poll interval, ms (default 50). */
  intervalMs?: number;
}

/** What the clients agreed on. */
export interface Converged {
  readonly revision: number;
  /** `stateHash` of the common state. */
  readonly hash: string;
}

/**
 * Waits until every client is at the same revision (at least `atLeast`) with the same state hash,
 * and returns them. Polls; on timeout throws an Error listing each client's revision, status and
 * hash. Two replicas at one revision always have one state, so a hash mismatch at equal
 * revisions is a real divergence: it throws at once.
 */
export async function waitForConvergence(
  clients: readonly SyncClient[],
  options: ConvergenceOptions = {},
): Promise<Converged> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  let last: Array<SyncProbe | undefined> = [];
  for (;;) {
    last = await Promise.all(clients.map((c) => probe(c)));
    const first = last[0];
    if (first && last.every((p) => p && p.revision === first.revision)) {
      if (last.some((p) => p!.hash !== first.hash)) {
        throw new Error(`replicas diverged at revision ${first.revision}:\n${describe(last)}`);
      }
      if (first.revision >= (options.atLeast ?? 0)) {
        return { revision: first.revision, hash: first.hash };
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`replicas did not converge within ${timeoutMs} ms:\n${describe(last)}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

function describe(probes: Array<SyncProbe | undefined>): string {
  return probes
    .map((p, i) =>
      p
        ? `  #${i} ${p.clientId}: revision ${p.revision}, ${p.status}, ${p.hash.slice(0, 12)}`
        : `  #${i}: not exposed`,
    )
    .join("\n");
}
