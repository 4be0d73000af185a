/**
 * `statesync tail [--from N]`: follows the log live and prints each entry as it is stored (the
 * columns of `history`; `--json`: one JSON object per line), until Ctrl-C (SIGINT) or SIGTERM,
 * then stops the follower, closes the connection and exits 0. A `--from` that compaction or
 * truncation removed starts at the first retained entry, with a warning on stderr naming it. It
 * survives server restarts (the connection reconnects forever; stderr says when it is lost and
 * back); a failure the follower cannot recover from (the stream was deleted, permission denied)
 * ends it with exit status 1. With
 * `--model`, the log is first replayed up to the start (the engine's `Replay`, see verdicts.ts),
 * then each entry followed, so each entry the replay does not apply says so.
 */
import type { JetStreamLog, LogEntry } from "@statesync/node";
import type { Command } from "commander";
import { z } from "zod";
import { action } from "../action.js";
import { ENTRY_HEADER, entryCells, entryLine, entryRow, markText } from "../entries.js";
import { loadModel } from "../model-file.js";
import { addCommonOptions, parseCommon, entryRevisionSchema, parseWith } from "../options.js";
import { printJson, printLines, printNotice } from "../output.js";
import { removedFromWarning, warnTruncated } from "../retained.js";
import { withLog, withSession } from "../session.js";
import { WentBackGuard } from "../tail-guard.js";
import { replayerOf, type Marker, type Remark } from "../verdicts.js";
import { MODEL_OPTION } from "./state.js";

const tailSchema = z.object({ from: entryRevisionSchema.optional(), model: z.string().optional() });

/** Resolves on the first SIGINT or SIGTERM (and stops listening for them). */
function untilSignal(): { done: Promise<NodeJS.Signals>; cancel(): void } {
  let cancel = () => undefined as void;
  const done = new Promise<NodeJS.Signals>((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      cancel();
      resolve(signal);
    };
    process.on("SIGINT", on);
    process.on("SIGTERM", on);
    cancel = () => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
    };
  });
  return { done, cancel };
}

/**
 * Says on stderr when the connection to the server is lost and when it is back, so that a
 * person watching an idle `tail` can tell a quiet log from a lost server (fresh-eyes trial: it
 * printed nothing while the server was down). The entries stored meanwhile are printed once it
 * is back, in order; stdout holds entries only. Returns the unsubscribe function.
 */
function watchConnection(
  log: { watchStatus: JetStreamLog["watchStatus"] },
  guard: WentBackGuard,
): () => void {
  let lost = false;
  return log.watchStatus((status) => {
    if (status === "offline" && !lost) {
      lost = true;
      guard.lost();
      printNotice("connection to the server lost: reconnecting (Ctrl-C to stop)");
    } else if (status === "online" && lost) {
      lost = false;
      // Said once the log is found to hold what was printed: a log that went back ends tail
      // instead (a trial saw "following again" just before LOG_REPLACED).
      void guard.back().then((fine) => fine && printNotice("reconnected: following again"));
    }
  });
}

/** Adds `tail` to `program`. */
export function registerTail(program: Command): void {
  addCommonOptions(
    program
      .command("tail")
      .description("follow the log live, one line per entry, until Ctrl-C")
      .option("--from <revision>", "start at this revision (default: after the latest)")
      .option(MODEL_OPTION[0], `${MODEL_OPTION[1]}: mark the entries its replay skips`),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const { from, model: spec } = parseWith(tailSchema, { from: raw.from, model: raw.model });
      const model = spec === undefined ? undefined : await loadModel(spec);
      const signals = untilSignal();
      // Ctrl-C before the follow started (a server that does not answer): exit 0 at once, as
      // once following. Before, tail waited out the connection timeout and exited 1 with
      // UNAVAILABLE (stop 25's trial); nothing is open yet that needs closing.
      let started = false;
      void signals.done.then(() => {
        if (!started) process.exit(0);
      });
      try {
        await withSession(
          o,
          (s) =>
            withLog(s, async (log) => {
              started = true;
              const info = await log.info();
              let start = from ?? info.latestRevision + 1;
              if (from !== undefined) {
                // A removed revision: said, then followed from the first retained one.
                const removed = await removedFromWarning(log, info, Math.max(1, from));
                warnTruncated(removed);
                if (removed !== undefined) start = info.firstRevision || info.latestRevision + 1;
                // Past the end: said, or a script waits without a word (fresh-eyes trial).
                if (from > info.latestRevision + 1) {
                  printNotice(
                    `statesync: warning: --from ${from} is past the latest revision (${info.latestRevision}): nothing is printed until the log reaches it`,
                  );
                }
              }
              const first = Math.max(1, start);
              // With --model the replay reads every entry before the first printed: up to the
              // latest now, and those after it (a --from past the latest) as they are followed.
              const through = Math.min(first - 1, info.latestRevision);
              // An entry printed while a chunked snapshot's parts were read: its mark, once known.
              const remark: Remark = (revision, replay, by) => {
                if (revision < first) return;
                printNotice(
                  `statesync: revision ${revision}, printed above, once the chunked snapshot at revision ${by} loaded: [${markText(replay)}]`,
                );
              };
              const mark: Marker | undefined =
                model &&
                (await replayerOf(log, model, info.firstRevision, through, undefined, remark)).mark;
              // What ended the follow, as it was thrown (printed with its own code, or INTERNAL).
              let failed: (e: { error: unknown }) => void = () => undefined;
              const failure = new Promise<{ error: unknown }>((resolve) => (failed = resolve));
              const print = (entry: LogEntry) => {
                const replay = mark?.(entry);
                if (entry.revision < first) return; // replayed, not asked for
                const row = entryRow(entry, replay);
                if (o.json) printJson(row);
                else printLines([entryLine(entryCells(row))]);
              };
              // Across a lost connection the log must still hold what was printed (tail-guard.ts).
              const guard = new WentBackGuard(
                log,
                print,
                (error) => failed({ error }),
                (a, b) =>
                  printNotice(
                    `statesync: warning: ${a === b ? `revision ${a} was` : `revisions ${a}-${b} were`} removed from the log (a compaction or a purge) before tail read ${a === b ? "it" : "them"}: not printed`,
                  ),
              );
              await guard.start(through);
              const follower = log.follow(mark ? through + 1 : first, {
                onEntry: (entry) => guard.entry(entry),
                onError: (error) => failed({ error }),
              });
              if (!o.json) printLines([entryLine(ENTRY_HEADER)]);
              printNotice(
                `following ${s.layout.subject} in stream ${s.layout.stream} from revision ${Math.max(1, start)} (Ctrl-C to stop)`,
              );
              const unwatch = watchConnection(log, guard);
              const ended = await Promise.race([signals.done, failure]);
              unwatch();
              guard.stop();
              await follower.stop();
              if (typeof ended === "object") throw ended.error;
            }),
          { follow: true },
        );
      } finally {
        signals.cancel();
      }
    }),
  );
}
