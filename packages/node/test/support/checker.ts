/**
 * A history checker for fault tests (after Jepsen's: record what clients did and saw, then check
 * the whole run against the guarantees). Written once, used by every scenario.
 *
 * The workload is the {@link ledger} model: every increment carries a unique `opId` that the state
 * records in `ops`, in application order. Clients record each operation they invoke with its
 * outcome (`ok` with the revision, `failed` with a code that means nothing was appended, or
 * `unknown`), and the revisions and states they observe through `subscribe`. {@link checkHistory}
 * then verifies:
 * - every update acknowledged as committed was applied exactly once (and, when the whole log is
 *   given, is in the log exactly once, at the revision it was acknowledged with);
 * - no update that definitely failed was applied or is in the log;
 * - an update with an unknown outcome was applied at most once;
 * - nothing was applied that no client invoked;
 * - all replicas at the same revision hold identical state (`stateHash`);
 * - no client observed its revision go backwards, and each applied the updates in log order
 *   (its `ops` is always a prefix of the final order, which is the log's order);
 * - the counter equals the sum of the applied increments (with only conditional `by: 1`
 *   increments: the number of committed increments).
 */
import { stateHash, type SynchronizerOf, type UpdateOptions } from "@statesync/node";
import type { LedgerState, ledger } from "./models.js";

/** A replica of the ledger model. */
export type LedgerSync = SynchronizerOf<typeof ledger>;

/** How an operation ended, as its caller saw it. */
export type Outcome =
  | { readonly status: "ok"; readonly revision: number }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "unknown"; readonly code: string };

/** One invoked increment. `outcome` undefined: still pending when the run ended (unknown). */
export interface OpRecord {
  readonly opId: string;
  readonly client: string;
  readonly kind: "conditional" | "unconditional";
  readonly by: number;
  outcome: Outcome | undefined;
}

/** What a client saw at one notification (kept small: no copy of the state). */
export interface Observation {
  readonly revision: number;
  /** `stateHash` of the state, when computed (see {@link History.watch}'s `hashEvery`). */
  readonly hash: string | undefined;
  readonly count: number;
  readonly opsLength: number;
  /** The last op id in `ops`, undefined when empty. */
  readonly lastOp: string | undefined;
}

/** A replica's final position, for the convergence check. */
export interface ReplicaState {
  readonly client: string;
  readonly revision: number;
  readonly state: LedgerState;
}

/** One log entry as far as the checker cares: its revision and the op ids it carries. */
export interface LogRecord {
  readonly revision: number;
  readonly opIds: readonly string[];
}

/**
 * Error codes after which nothing was appended: the update definitely failed. Every other
 * rejection (`UNKNOWN_OUTCOME`, `UNAVAILABLE`, a stall error raised after the append, anything
 * unexpected) leaves the outcome unknown.
 */
export const DEFINITE_FAILURES: ReadonlySet<string> = new Set([
  "VALIDATION",
  "PAYLOAD_TOO_LARGE",
  "PERMISSION_DENIED",
  "RETRY_LIMIT",
  "UNKNOWN_COMMAND",
  "ABORTED",
  "CLOSED",
]);

/** The outcome a rejection means (see {@link DEFINITE_FAILURES}). */
export function classify(error: unknown): Outcome {
  const code = (error as { code?: unknown } | undefined)?.code;
  const c = typeof code === "string" ? code : `EXCEPTION: ${String(error)}`;
  return DEFINITE_FAILURES.has(c) ? { status: "failed", code: c } : { status: "unknown", code: c };
}

/** Records operations and observations of one run. */
export class History {
  readonly ops: OpRecord[] = [];
  readonly observations = new Map<string, Observation[]>();
  /** `"error"` events the replicas reported, by client. */
  readonly reported: Array<{ client: string; code: string; message: string }> = [];
  private readonly byId = new Map<string, OpRecord>();
  private counter = 0;

  /** A fresh op id for `client` (`<client>.<n>`). */
  nextOpId(client: string): string {
    this.counter += 1;
    return `${client}.${this.counter}`;
  }

  /** Records that `client` invoked an increment (before calling it). */
  invoke(op: Omit<OpRecord, "outcome">): OpRecord {
    if (this.byId.has(op.opId)) throw new Error(`op id ${op.opId} used twice`);
    const record: OpRecord = { ...op, outcome: undefined };
    this.ops.push(record);
    this.byId.set(op.opId, record);
    return record;
  }

  /** Records how an invoked op ended. */
  complete(opId: string, outcome: Outcome): void {
    const record = this.byId.get(opId);
    if (!record) throw new Error(`unknown op id ${opId}`);
    record.outcome = outcome;
  }

  /**
   * Invokes one increment on `sync` (conditional: `update("increment")`; unconditional:
   * `updateUnconditionally("increment")`) and records it and its outcome.
   */
  async increment(
    sync: LedgerSync,
    client: string,
    kind: OpRecord["kind"],
    by = 1,
    options?: UpdateOptions,
  ): Promise<Outcome> {
    const opId = this.nextOpId(client);
    this.invoke({ opId, client, kind, by });
    let outcome: Outcome;
    try {
      const r =
        kind === "conditional"
          ? await sync.update("increment", { by, opId }, options)
          : await sync.updateUnconditionally("increment", { by, opId }, options);
      outcome = { status: "ok", revision: r.revision };
    } catch (e) {
      outcome = classify(e);
    }
    this.complete(opId, outcome);
    return outcome;
  }

  /** Records one observation of `client`. */
  observe(client: string, revision: number, state: LedgerState, hash = true): void {
    let list = this.observations.get(client);
    if (!list) this.observations.set(client, (list = []));
    list.push({
      revision,
      hash: hash ? stateHash(state) : undefined,
      count: state.count,
      opsLength: state.ops.length,
      lastOp: state.ops.at(-1),
    });
  }

  /** {@link watch} for each replica of a record keyed by client name. */
  watchAll(replicas: Record<string, LedgerSync>): void {
    for (const [client, sync] of Object.entries(replicas)) this.watch(client, sync);
  }

  /**
   * Subscribes to `sync`'s states and errors under the name `client`. `hashEvery` n hashes every
   * n-th state only (hashing a large state at every notification is the costly part).
   * Returns a function that stops watching.
   */
  watch(client: string, sync: LedgerSync, options: { hashEvery?: number } = {}): () => void {
    const every = options.hashEvery ?? 1;
    let n = 0;
    this.observe(client, sync.revision, sync.state as LedgerState);
    const unsubscribe = sync.subscribe((state, revision) => {
      n += 1;
      this.observe(client, revision, state as LedgerState, n % every === 0);
    });
    const unlisten = sync.on("error", (e) =>
      this.reported.push({ client, code: e.code, message: e.message }),
    );
    return () => {
      unsubscribe();
      unlisten();
    };
  }

  /** Counts of outcomes: `ok`, `failed:<code>`, `unknown:<code>`, `pending`. */
  summary(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const op of this.ops) {
      const key =
        op.outcome === undefined
          ? "pending"
          : op.outcome.status === "ok"
            ? "ok"
            : `${op.outcome.status}:${op.outcome.code}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }
}

/** The verdict of {@link checkHistory}: `violations` empty when the run kept every guarantee. */
export interface Verdict {
  readonly ok: boolean;
  readonly violations: string[];
  readonly stats: {
    readonly ok: number;
    readonly failed: number;
    readonly unknown: number;
    readonly unknownApplied: number;
    readonly applied: number;
    readonly observations: number;
    readonly finalRevision: number;
  };
}

/** What {@link checkHistory} checks. */
export interface CheckInput {
  readonly ops: readonly OpRecord[];
  /** Final positions of the replicas (at least one). The one at the highest revision is the reference. */
  readonly replicas: readonly ReplicaState[];
  readonly observations?: ReadonlyMap<string, readonly Observation[]>;
  /**
   * The log in revision order with the op ids of each entry, when its whole history is retained
   * (no compaction); see {@link logRecords}.
   */
  readonly log?: readonly LogRecord[];
}

const MAX_LISTED = 20;

/** Checks a recorded run (see the module comment). Never throws. */
export function checkHistory(input: CheckInput): Verdict {
  const violations: string[] = [];
  const fail = (message: string) => {
    if (violations.length < MAX_LISTED) violations.push(message);
    else if (violations.length === MAX_LISTED) violations.push("(more violations left out)");
  };
  const ops = new Map<string, OpRecord>();
  for (const op of input.ops) {
    if (ops.has(op.opId)) fail(`op id ${op.opId} was invoked twice`);
    ops.set(op.opId, op);
  }

  // Convergence: replicas at one revision hold one state.
  if (input.replicas.length === 0) fail("no replica state given");
  const byRevision = new Map<number, { hash: string; client: string }>();
  for (const r of input.replicas) {
    const hash = stateHash(r.state);
    const seen = byRevision.get(r.revision);
    if (seen && seen.hash !== hash) {
      fail(`replicas ${seen.client} and ${r.client} differ at revision ${r.revision}`);
    } else if (!seen) byRevision.set(r.revision, { hash, client: r.client });
  }
  const reference = [...input.replicas].sort((a, b) => b.revision - a.revision)[0];
  const applied = reference?.state.ops ?? [];

  // Applied exactly once / at most once / never.
  const times = new Map<string, number>();
  for (const id of applied) times.set(id, (times.get(id) ?? 0) + 1);
  let okCount = 0;
  let failedCount = 0;
  let unknownCount = 0;
  let unknownApplied = 0;
  for (const op of input.ops) {
    const n = times.get(op.opId) ?? 0;
    const o = op.outcome;
    if (o?.status === "ok") {
      okCount += 1;
      if (n !== 1)
        fail(`${op.opId} was acknowledged at revision ${o.revision} but applied ${n} times`);
    } else if (o?.status === "failed") {
      failedCount += 1;
      if (n !== 0) fail(`${op.opId} failed with ${o.code} but was applied ${n} times`);
    } else {
      unknownCount += 1;
      if (n > 0) unknownApplied += 1;
      if (n > 1) fail(`${op.opId} (outcome unknown) was applied ${n} times`);
    }
  }
  for (const id of times.keys()) {
    if (!ops.has(id)) fail(`${id} was applied but no client invoked it`);
  }
  if (reference) {
    const sum = applied.reduce((s, id) => s + (ops.get(id)?.by ?? 0), 0);
    if (reference.state.count !== sum) {
      fail(`the counter is ${reference.state.count} but the applied increments sum to ${sum}`);
    }
  }

  // The log: each acknowledged op in exactly one entry, at its revision; log order = applied order.
  if (input.log) {
    const inLog = new Map<string, number[]>();
    const order: string[] = [];
    let previous = 0;
    for (const entry of input.log) {
      if (entry.revision <= previous) fail(`log revisions out of order at ${entry.revision}`);
      previous = entry.revision;
      for (const id of entry.opIds) {
        order.push(id);
        const list = inLog.get(id) ?? [];
        list.push(entry.revision);
        inLog.set(id, list);
      }
    }
    for (const op of input.ops) {
      const at = inLog.get(op.opId) ?? [];
      const o = op.outcome;
      if (o?.status === "ok") {
        if (at.length !== 1) fail(`${op.opId} is in the log ${at.length} times (acknowledged)`);
        else if (at[0] !== o.revision) {
          fail(`${op.opId} was acknowledged at revision ${o.revision} but is at ${at[0]}`);
        }
      } else if (o?.status === "failed") {
        if (at.length > 0) fail(`${op.opId} failed with ${o.code} but is in the log`);
      } else if (at.length > 1) {
        fail(`${op.opId} (outcome unknown) is in the log ${at.length} times`);
      }
    }
    for (const id of inLog.keys()) {
      if (!ops.has(id)) fail(`${id} is in the log but no client invoked it`);
    }
    // Duplicates in the log that replicas skipped would show here as a different order.
    const once = new Set<string>();
    const dedup = order.filter((id) => (once.has(id) ? false : (once.add(id), true)));
    if (dedup.length !== applied.length || dedup.some((id, i) => applied[i] !== id)) {
      fail("replicas applied the updates in an order other than the log's");
    }
  }

  // Observations: monotonic revisions, one state per revision, ops always a prefix of the order.
  let observationCount = 0;
  const hashAt = new Map<number, { hash: string; client: string }>();
  for (const r of input.replicas) hashAt.set(r.revision, byRevision.get(r.revision)!);
  const prefixSum: number[] = [0];
  for (const id of applied) prefixSum.push(prefixSum.at(-1)! + (ops.get(id)?.by ?? 0));
  for (const [client, list] of input.observations ?? []) {
    let last: Observation | undefined;
    for (const o of list) {
      observationCount += 1;
      if (last && o.revision < last.revision) {
        fail(`${client} went back from revision ${last.revision} to ${o.revision}`);
      }
      if (last && o.opsLength < last.opsLength) {
        fail(`${client} un-applied updates (ops ${last.opsLength} -> ${o.opsLength})`);
      }
      if (o.hash !== undefined) {
        const seen = hashAt.get(o.revision);
        if (seen && seen.hash !== o.hash) {
          fail(`${client} and ${seen.client} saw different states at revision ${o.revision}`);
        } else if (!seen) hashAt.set(o.revision, { hash: o.hash, client });
      }
      if (o.opsLength > applied.length) {
        fail(`${client} saw ${o.opsLength} applied updates, more than the final ${applied.length}`);
      } else if (o.opsLength > 0 && applied[o.opsLength - 1] !== o.lastOp) {
        fail(
          `${client} applied ${o.lastOp} as update #${o.opsLength}; the log order has ${applied[o.opsLength - 1]}`,
        );
      } else if (o.count !== prefixSum[o.opsLength]) {
        fail(
          `${client} saw count ${o.count} after ${o.opsLength} updates worth ${prefixSum[o.opsLength]}`,
        );
      }
      last = o;
    }
  }

  return {
    ok: violations.length === 0,
    violations,
    stats: {
      ok: okCount,
      failed: failedCount,
      unknown: unknownCount,
      unknownApplied,
      applied: applied.length,
      observations: observationCount,
      finalRevision: reference?.revision ?? 0,
    },
  };
}

/**
 * The log as {@link LogRecord}s, read with `history()`: the op ids of the `increment` commands of
 * every entry (a conditional entry may carry several queued updates). Throws when the history is
 * not complete (it does not start with the genesis entry), since the log checks need all of it.
 */
export async function logRecords(sync: LedgerSync, timeoutMs = 60_000): Promise<LogRecord[]> {
  // A read may time out (UNAVAILABLE) while a cluster recovers from a lost node: try again.
  const deadline = Date.now() + timeoutMs;
  let entries: Awaited<ReturnType<LedgerSync["history"]>>;
  for (;;) {
    try {
      entries = await sync.history();
      break;
    } catch (e) {
      if ((e as { code?: string }).code !== "UNAVAILABLE" || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  if (entries[0]?.kind !== "genesis") {
    throw new Error(`the log starts with a ${entries[0]?.kind ?? "nothing"} entry, not genesis`);
  }
  return entries.map((e) => ({
    revision: e.revision,
    opIds: e.commands
      .filter((c) => c.name === "increment")
      .map((c) => String((c.args as { opId?: unknown } | undefined)?.opId)),
  }));
}

/** The final positions of `replicas` by name, for {@link CheckInput.replicas}. */
export function finalStates(replicas: Record<string, LedgerSync>): ReplicaState[] {
  return Object.entries(replicas).map(([client, s]) => ({
    client,
    revision: s.revision,
    state: s.state as LedgerState,
  }));
}

/** Throws an Error listing the violations, with the run's summary, unless the verdict is ok. */
export function assertVerdict(verdict: Verdict, history?: History): void {
  if (verdict.ok) return;
  const summary = history ? `\noutcomes: ${JSON.stringify(history.summary())}` : "";
  throw new Error(`history check failed:\n- ${verdict.violations.join("\n- ")}${summary}`);
}
