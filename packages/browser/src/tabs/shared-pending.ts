import {
  refuseThenable,
  runOnView,
  type CommandMap,
  type Immutable,
  type Model,
  type StateSynchronizer,
} from "@statesync/core";
import { produce } from "immer";
import { z } from "zod/v4";

/**
 * What a tab tells the others of its pending updates: the named commands not confirmed yet, and
 * the revision of its confirmed state when it said so.
 */
const messageSchema = z.union([
  z.object({ t: z.literal("hello") }),
  z.object({
    t: z.literal("pending"),
    from: z.string().max(64),
    q: z.string().max(512).optional(),
    revision: z.number().int().nonnegative(),
    ops: z.array(z.object({ c: z.string().max(256), a: z.unknown(), at: z.number() })).max(10_000),
  }),
]);

type Foreign = {
  revision: number;
  q: string | undefined;
  ops: Array<{ c: string; a: unknown; at: number }>;
};

/**
 * Shows the other tabs' pending updates in this tab's optimistic view, before the server has
 * them (docs/offline.md, "Tabs"): each tab posts its pending named commands (on a
 * `BroadcastChannel` of its own) whenever they change, with its confirmed revision; the others
 * run them on top of their own optimistic view. Returns `sync` with `optimisticState` and
 * `subscribe(…, { optimistic: true })` showing them (what the React hooks read), and a stop
 * function.
 *
 * A preview, not a guarantee: another tab's update is shown only while this tab's confirmed
 * revision is not past the one the other tab reported (else it may already be in the confirmed
 * state, and would show twice); it shows again with the other tab's next report. A command that
 * throws here or returns a promise, or arguments this model refuses, are left out. Plain recipes
 * are not shared. `queue` names this tab's queue (its slot's owner): a report of a queue replaces
 * the reports of that queue from other tabs, so the edits of a tab reloaded while offline (the
 * same queue, a new tab) show once: the old tab never said it was gone (a trial saw them twice
 * in every other tab for as long as the server was down).
 */
export function sharePendingAcrossTabs<S, C extends CommandMap<S>>(
  sync: StateSynchronizer<S, C>,
  model: Model<S, C>,
  name: string,
  tabId: string,
  queue?: string,
): { sync: StateSynchronizer<S, C>; stop(): void } {
  const channel = new BroadcastChannel(`${name}:pending`);
  const foreign = new Map<string, Foreign>();
  const listeners = new Set<() => void>();
  let cache: { base: unknown; revision: number; version: number; state: Immutable<S> } | undefined;
  let version = 0;
  let posting = false;

  const post = () => {
    if (posting) return;
    posting = true;
    queueMicrotask(() => {
      posting = false;
      const ops = sync.pending
        .filter((p) => p.command !== undefined)
        .map((p) => ({ c: p.command!, a: p.args, at: p.queuedAt }));
      try {
        channel.postMessage({ t: "pending", from: tabId, q: queue, revision: sync.revision, ops });
      } catch {
        // closed
      }
    });
  };
  channel.onmessage = (e: MessageEvent) => {
    const m = messageSchema.safeParse(e.data);
    if (!m.success) return;
    if (m.data.t === "hello") return post();
    const { from, q, revision, ops } = m.data;
    if (q !== undefined) {
      for (const [other, f] of foreign) if (other !== from && f.q === q) foreign.delete(other);
    }
    if (ops.length === 0) foreign.delete(from);
    else foreign.set(from, { revision, q, ops });
    version += 1;
    for (const l of [...listeners]) l();
  };
  const stops = [sync.subscribe(post, { optimistic: true }), sync.on("drained", post)];
  channel.postMessage({ t: "hello" });
  post();

  const view = (): Immutable<S> => {
    const base = sync.optimisticState;
    if (foreign.size === 0) return base;
    const revision = sync.revision;
    if (cache && cache.base === base && cache.revision === revision && cache.version === version) {
      return cache.state;
    }
    let state = base;
    for (const [from, f] of foreign) {
      if (revision > f.revision) continue; // may be confirmed already: wait for its next report
      for (const op of f.ops) {
        const command = model.commands[op.c];
        const args = command?.args.safeParse(op.a);
        if (!command || !args?.success) continue;
        let n = op.at >>> 0;
        const ctx = {
          revision,
          timestamp: op.at,
          clientId: from,
          random: () => (n = (n * 1_103_515_245 + 12_345) >>> 0) / 2 ** 32,
        };
        try {
          state = produce(state, (draft) => {
            refuseThenable(
              runOnView(draft as object, (view) => command.apply(view as never, args.data, ctx)),
            );
          });
        } catch {
          // refused here: it will be refused when pushed, or apply once confirmed
        }
      }
    }
    cache = { base, revision, version, state };
    return state;
  };

  const shared = new Proxy(sync, {
    get(target, prop, receiver) {
      if (prop === "optimisticState") return view();
      if (prop === "subscribe") {
        return (
          listener: (state: Immutable<S>, revision: number) => void,
          options?: { optimistic?: boolean },
        ) => {
          if (!options?.optimistic) return target.subscribe(listener, options);
          const call = () => listener(view(), target.revision);
          listeners.add(call);
          const stop = target.subscribe(call, options);
          return () => {
            listeners.delete(call);
            stop();
          };
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    sync: shared,
    stop() {
      stops.forEach((s) => s());
      try {
        channel.postMessage({ t: "pending", from: tabId, revision: 0, ops: [] });
      } catch {
        // closed
      }
      channel.close();
    },
  };
}
