import type { Page } from "@playwright/test";
import { EXPOSED_GLOBAL, probeSynchronizer, type SyncProbe } from "@statesync/browser";
import { StateSyncError, type StateSynchronizer } from "@statesync/core";
import { z } from "zod/v4";

/**
 * A replica a test can read: a Node `StateSynchronizer`, a page whose app called
 * `exposeSynchronizer(sync)` (name `"default"`), or `{ page, name }` for a replica the page's
 * app exposed as `exposeSynchronizer(sync, name)` (`name` is that registry name, not a label).
 */
export type SyncClient = StateSynchronizer<any, any> | Page | { page: Page; name: string };

function isPage(client: unknown): client is Page {
  return typeof (client as Page).evaluate === "function" && "mainFrame" in (client as object);
}

/**
 * The probe of a client (revision, status, `stateHash` of the state, stats), or undefined while
 * a page has not exposed its replica yet (still loading, or reloading). A `client` of another
 * kind rejects with `StateSyncError` `VALIDATION`.
 */
export async function probe(client: SyncClient): Promise<SyncProbe | undefined> {
  check(clientSchema, client, "probe", "client");
  return probeClient(client);
}

async function probeClient(client: SyncClient): Promise<SyncProbe | undefined> {
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
  /** Give up after this many ms (default 15,000): a finite number, 0 or more. */
  timeoutMs?: number;
  /** Also wait until the common revision is at least this (a non-negative integer). */
  atLeast?: number;
  /** Poll interval, ms (default 50): 1 to 2^31 - 1 (what `setTimeout` can wait). */
  intervalMs?: number;
}

/** The longest delay `setTimeout` honours (a longer one fires after 1 ms, with a warning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const optionsSchema = z
  .strictObject({
    timeoutMs: z.number().nonnegative().finite().optional(),
    atLeast: z.number().int().nonnegative().optional(),
    intervalMs: z.number().min(1).max(MAX_TIMER_MS).optional(),
  })
  .optional();

/** A client {@link probe} can read: a Page, `{ page, name }`, or a replica (`revision`, `state`). */
const isClient = (c: unknown): boolean => {
  if (typeof c !== "object" || c === null) return false;
  const o = c as Record<string, unknown>;
  if (isPage(c)) return true;
  if ("page" in o) return isPage(o.page) && typeof o.name === "string";
  return typeof o.revision === "number" && "state" in o && "clientId" in o;
};

const clientSchema = z.custom<SyncClient>(
  isClient,
  "a client must be a StateSynchronizer, a Page or { page, name }",
);

const clientsSchema = z
  .array(clientSchema)
  .min(1, "give at least one client (there is nothing to converge on in an empty list)");

/** `schema`'s parse of `value`, or `VALIDATION` naming `fn`, `what` and zod's account of it. */
function check<T>(schema: z.ZodType<T>, value: unknown, fn: string, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new StateSyncError(
    "VALIDATION",
    `invalid ${fn} ${what}: ${z.prettifyError(parsed.error)}`,
    {
      cause: parsed.error,
    },
  );
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
 *
 * Its arguments are checked before it polls: an empty `clients` list (nothing to converge on),
 * a client of another kind, an unknown option, `atLeast` that is not a non-negative integer,
 * `timeoutMs` that is not a finite number of 0 or more, `intervalMs` outside 1 to 2^31 - 1,
 * reject at once with `StateSyncError` `VALIDATION` naming what is wrong.
 */
export async function waitForConvergence(
  clients: readonly SyncClient[],
  options?: ConvergenceOptions,
): Promise<Converged> {
  check(clientsSchema, clients, "waitForConvergence", "clients");
  options = check(optionsSchema, options, "waitForConvergence", "options") ?? {};
  const timeoutMs = options.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  let last: Array<SyncProbe | undefined> = [];
  for (;;) {
    last = await Promise.all(clients.map((c) => probeClient(c)));
    const first = last[0];
    if (first && last.every((p) => p && p.revision === first.revision)) {
      if (last.some((p) => p!.hash !== first.hash)) {
        const why = `replicas diverged at revision ${first.revision}`;
        throw new Error(`${why}:\n${describe(clients, last)}`);
      }
      if (first.revision >= (options.atLeast ?? 0)) {
        return { revision: first.revision, hash: first.hash };
      }
    }
    if (Date.now() > deadline) {
      const why = `replicas did not converge within ${timeoutMs} ms`;
      throw new Error(`${why}:\n${describe(clients, last)}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

/**
 * One line per client: which one it is (a Node replica, or a page's URL and exposed name, so a
 * stuck one is found without counting), then its probe, or why there is none.
 */
function describe(
  clients: readonly SyncClient[],
  probes: ReadonlyArray<SyncProbe | undefined>,
): string {
  return probes
    .map((p, i) => {
      const c = clients[i]!;
      const page = isPage(c) ? c : "page" in c ? c.page : undefined;
      const name = isPage(c) ? "default" : "page" in c ? c.name : undefined;
      const what = page ? `page ${safeUrl(page)} (exposed as "${name}")` : "Node replica";
      if (!p) {
        const why = `not exposed: the page has not called exposeSynchronizer(sync${name === "default" ? "" : `, "${name}"`}) (yet)`;
        return `  #${i} ${what}: ${why}`;
      }
      return `  #${i} ${what} ${p.clientId}: revision ${p.revision}, ${p.status}, ${p.hash.slice(0, 12)}`;
    })
    .join("\n");
}

function safeUrl(page: Page): string {
  try {
    return page.isClosed() ? "(closed)" : page.url();
  } catch {
    return "(unknown)";
  }
}
