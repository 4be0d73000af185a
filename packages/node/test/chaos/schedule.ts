/**
 * The chaos test's schedule: what each replica does, and which faults strike, at which time,
 * drawn from one seed (see {@link makeSchedule}). The same seed always gives the same schedule;
 * only the timing of the real system under it varies.
 */
import { prng } from "./prng.js";

/** One kind of step: an operation of a replica, or a fault. */
export type StepKind =
  /** `update("increment", { by: 1, opId })`: a named command, conditional. */
  | "command"
  /** `update(draft => ...)`: a recipe doing the same, conditional. */
  | "recipe"
  /** `updateUnconditionally("increment", { by: 1, opId })`. */
  | "unconditional"
  /** `compact()`. */
  | "compact"
  /** `close()`, then open again from its snapshot directory after `ms`. */
  | "reopen"
  /** Cuts the replica's connection at its TCP proxy and refuses new ones for `ms`. */
  | "cut"
  /** Holds everything the replica's proxy forwards, both ways, for `ms` (a frozen network). */
  | "pause"
  /**
   * Arms the replica's proxy: its next publish on the stream reaches the server, then the
   * connection is cut before the acknowledgement returns, and refused for `ms` (a lost ack).
   */
  | "lostAck"
  /** SIGKILL of nats-server, then a start on the same store and port after `ms`. */
  | "restart";

/** One step: at `at` ms from the start, `kind` on replica `replica` (ignored by `restart`). */
export interface Step {
  readonly at: number;
  readonly kind: StepKind;
  readonly replica: number;
  /** Duration of a fault or of a reopen's closed time, ms. */
  readonly ms: number;
}

/** A run's plan. */
export interface Schedule {
  readonly seed: number;
  readonly replicas: number;
  readonly durationMs: number;
  /** Automatic compaction of every replica: after this many entries (with jitter), or off. */
  readonly autoCompaction: number | false;
  readonly steps: readonly Step[];
}

const WEIGHTS: Record<StepKind, number> = {
  command: 30,
  recipe: 15,
  unconditional: 25,
  compact: 4,
  reopen: 5,
  cut: 6,
  pause: 4,
  lostAck: 5,
  restart: 2,
};

/**
 * The schedule of `seed`: 3 to 5 replicas, automatic compaction every 4-20 entries in half the
 * runs (never with `autoCompaction: false`), steps every 15-120 ms over `durationMs`, at most
 * `maxRestarts` server restarts, at least 1.5 s apart.
 */
export function makeSchedule(
  seed: number,
  options: { durationMs?: number; maxRestarts?: number; autoCompaction?: false } = {},
): Schedule {
  const r = prng(seed);
  const durationMs = options.durationMs ?? 4_000;
  const maxRestarts = options.maxRestarts ?? 2;
  const replicas = r.int(3, 5);
  // Drawn apart from the steps, so that a seed's steps do not depend on this choice.
  const c = prng(seed ^ 0x9e3779b9);
  const autoCompaction = options.autoCompaction === false ? false : c.next() < 0.5 && c.int(4, 20);
  const steps: Step[] = [];
  let restarts = 0;
  let lastRestart = -Infinity;
  for (let at = r.int(0, 50); at < durationMs; at += r.int(15, 120)) {
    let kind = r.weighted(WEIGHTS);
    if (kind === "restart" && (restarts >= maxRestarts || at - lastRestart < 1_500)) {
      kind = "command";
    }
    if (kind === "restart") {
      restarts += 1;
      lastRestart = at;
    }
    const ms =
      kind === "restart" ? r.int(100, 1_500) : kind === "pause" ? r.int(200, 3_000) : r.int(0, 600);
    steps.push({ at, kind, replica: r.int(0, replicas - 1), ms });
  }
  return { seed, replicas, durationMs, autoCompaction, steps };
}

/** The schedule as text, one step a line, for a failure's report. */
export function formatSchedule(s: Schedule): string {
  const lines = s.steps.map(
    (p) =>
      `  ${String(p.at).padStart(5)} ms  ${p.kind.padEnd(13)}${p.kind === "restart" ? "   " : `r${p.replica}`}  ${p.ms} ms`,
  );
  const auto = s.autoCompaction === false ? "off" : `every ${s.autoCompaction} entries`;
  return `seed ${s.seed}: ${s.replicas} replicas, ${s.durationMs} ms, automatic compaction ${auto}\n${lines.join("\n")}`;
}
