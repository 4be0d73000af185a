/**
 * The `fanout` benchmark's server restart (after the measured window): the time until the server
 * answers again, until every follower is live again, and until every follower applied an update
 * written after the restart. And what the server's log complained about over the run.
 */
import type { NatsServer } from "@statesync/node";
import { minMark, statusLine, sumStatus, until } from "./fanout-children.js";
import type { Child } from "./lib/child.js";
import type { CounterSync } from "./lib/common.js";
import { num } from "./lib/format.js";
import { describeError, sleep } from "./lib/harness.js";

/** Seconds from the restart (undefined: not reached within the cap). */
export interface RestartFigures {
  /** Until the server answers again. */
  restartServerS: number | undefined;
  /** Until every follower is live again. */
  restartLiveS: number | undefined;
  /** Until every follower applied an update written after the restart. */
  restartAppliedS: number | undefined;
}

/**
 * Restarts `server` under `total` followers in `children` and writes mark `seq` once it is back.
 * Never throws: what went wrong is pushed onto `notes`.
 */
export async function measureRestart(
  server: NatsServer,
  writer: CounterSync,
  children: Child[],
  total: number,
  seq: number,
  capMs: number,
  notes: string[],
  say: (m: string) => void,
): Promise<RestartFigures> {
  say("restarting the server");
  const r0 = Date.now();
  const figures: RestartFigures = {
    restartServerS: undefined,
    restartLiveS: undefined,
    restartAppliedS: undefined,
  };
  try {
    await server.restart();
    figures.restartServerS = (Date.now() - r0) / 1000;
    say(`server up again after ${num(figures.restartServerS, 1)} s`);
    const liveMs = await until(
      children,
      (s) => sumStatus(s, "live") === total,
      capMs,
      (s) => say(`after the restart: ${statusLine(s)}`),
    );
    if (liveMs !== undefined) figures.restartLiveS = (Date.now() - r0) / 1000;
    else notes.push(`not every follower live within ${capMs / 1000} s of a restart`);
    for (;;) {
      try {
        await writer.update("mark", { seq });
        break;
      } catch (err) {
        if (Date.now() - r0 > capMs) throw err;
        await sleep(250);
      }
    }
    const appliedMs = await until(
      children,
      (s) => minMark(s) >= seq,
      Math.max(10_000, capMs - (Date.now() - r0)),
      (s) => say(`after the restart: slowest follower at mark ${minMark(s)}/${seq}`),
    );
    if (appliedMs !== undefined) figures.restartAppliedS = (Date.now() - r0) / 1000;
  } catch (err) {
    notes.push(`restart: ${describeError(err)}`);
  }
  return figures;
}

/** What the server complained about (its last 500 log lines): slow consumers, errors. */
export function serverLogNotes(server: NatsServer): string[] {
  const notes: string[] = [];
  const log = server.output().split("\n");
  const slow = log.filter((l) => /slow consumer/i.test(l)).length;
  const errors = log.filter(
    (l) => /\[ERR\]|\[WRN\]/.test(l) && !/Websocket not configured/.test(l),
  );
  if (slow > 0) notes.push(`server log: ${slow} slow-consumer lines (of the last 500)`);
  if (errors.length > 0)
    notes.push(`server log: ${errors.length} [ERR]/[WRN] lines, last: ${errors.at(-1)}`);
  return notes;
}
