/** The `fanout` option of `JetStreamLog` (docs/fanout.md): its shape, schema and defaults. */
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import { isValidSubjectPrefix, type JetStreamLayout } from "./layout.js";
import { checkLivePrefix } from "./live-follower.js";
import { DEFAULT_LIVE_PREFIX } from "./republish.js";

/** Options of fan-out (see {@link JetStreamLogOptions.fanout}). */
export interface FanoutOptions {
  /**
   * First tokens of the republish destination, `<prefix>.<stream subject>` (default
   * `statesync.live`); must not overlap the stream's subjects.
   */
  prefix?: string;
  /** Add the republish rule to an existing stream that has none (default false). */
  enable?: boolean;
  /** Mean quiet time after which a follower checks for a lost last entry, ms (default 15000). */
  tailCheckMs?: number;
  /** Longest random wait before a follower reads the log after a reconnection, ms (default 2000). */
  reconnectJitterMs?: number;
}

/** zod schema of the option. */
export const fanoutSchema = z
  .union(
    [
      z.boolean(),
      z.strictObject({
        prefix: z.string().optional(),
        enable: z.boolean().optional(),
        tailCheckMs: z.number().int().min(100).max(3_600_000).optional(),
        reconnectJitterMs: z.number().int().min(0).max(600_000).optional(),
      }),
    ],
    {
      error: "fanout must be true, false or { prefix?, enable?, tailCheckMs?, reconnectJitterMs? }",
    },
  )
  .optional();

/** The fan-out options with defaults, or undefined when off; `VALIDATION` for a bad prefix. */
export function fanoutOptions(
  option: boolean | FanoutOptions | undefined,
  layout: JetStreamLayout,
): Required<FanoutOptions> | undefined {
  if (option === undefined || option === false) return undefined;
  const o = option === true ? {} : option;
  const prefix = o.prefix ?? DEFAULT_LIVE_PREFIX;
  if (!isValidSubjectPrefix(prefix)) {
    throw new StateSyncError("VALIDATION", `invalid fanout prefix ${JSON.stringify(prefix)}`);
  }
  checkLivePrefix(prefix, layout.streamSubjects, o.prefix !== undefined);
  return {
    prefix,
    enable: o.enable ?? false,
    tailCheckMs: o.tailCheckMs ?? 15_000,
    reconnectJitterMs: o.reconnectJitterMs ?? 2_000,
  };
}
