import type { EvaluationContext as OpenFeatureContext, Logger } from "@openfeature/core";
import { FlagdCore } from "@openfeature/flagd-core";
import type { StateSynchronizer } from "@statesync/core";
import { variantKind, type FlagdConfig, type Json, type VariantKind } from "./flagd-schema.js";

/** A flag configuration: a replica's `synchronizer.state` (deeply readonly), or a plain one. */
export type FlagsState = StateSynchronizer<FlagdConfig>["state"] | FlagdConfig;

/**
 * Who a flag is evaluated for: `targetingKey` (buckets `fractional`) and any attributes,
 * OpenFeature's evaluation context: values may be nested objects and arrays, read in targeting
 * with dotted paths (`{"var": "user.plan"}`).
 */
export type EvaluationContext = OpenFeatureContext;

/** The outcome of one evaluation (flagd's resolution details). */
export interface Evaluation<T extends Json = Json> {
  /** The variant's value; `defaultValue` when the flag is disabled, missing or of another type. */
  readonly value: T;
  /** The variant served; undefined when `defaultValue` was returned. */
  readonly variant: string | undefined;
  /** flagd's reason: `STATIC`, `TARGETING_MATCH`, `DEFAULT`, `DISABLED` or `ERROR`. */
  readonly reason: string;
  /** Set when `reason` is `ERROR`: `FLAG_NOT_FOUND`, `TYPE_MISMATCH`, ... */
  readonly errorCode?: string | undefined;
}

const quietLogger: Logger = {
  error: (...args: unknown[]) => console.error("[flagd]", ...args),
  warn: () => {},
  info: () => {},
  debug: () => {},
};

/**
 * Evaluates flags of a flagd configuration with `@openfeature/flagd-core`, flagd's own
 * evaluation engine (JsonLogic with flagd's `fractional`, `sem_ver`, `starts_with`, `ends_with`).
 * Evaluation reads only the configuration passed in: give it the local replica's state.
 *
 * The configuration is loaded once per state object: replicas replace the state on every change
 * and never mutate it, so object identity tells whether it changed.
 */
export class FlagEvaluator {
  readonly #core: FlagdCore;
  #loaded: FlagsState | undefined;

  constructor(logger: Logger = quietLogger) {
    this.#core = new FlagdCore(undefined, logger);
  }

  /**
   * Evaluates `flagKey` for `context`. `defaultValue` is what the application falls back to (as
   * in OpenFeature): returned for a disabled or unknown flag, and its type is the flag type
   * expected unless `type` says otherwise (the CLI passes the kind of the flag's variants with
   * a `null` default). Throws when the configuration itself is not a valid flagd configuration.
   */
  evaluate<T extends Json>(
    flags: FlagsState,
    flagKey: string,
    context: EvaluationContext,
    defaultValue: T,
    type: VariantKind = variantKind(defaultValue),
  ): Evaluation<T> {
    if (flags !== this.#loaded) {
      this.#core.setConfigurations(JSON.stringify(flags));
      this.#loaded = flags;
    }
    const details = this.#core.resolve(type, flagKey, defaultValue as never, context);
    return {
      value: details.value as T,
      variant: details.variant,
      reason: details.reason ?? "UNKNOWN",
      errorCode: details.errorCode,
    };
  }
}

/** Short text for an evaluation: the variant name, or the value when no variant was served. */
export function describeEvaluation(evaluation: Evaluation): string {
  if (evaluation.variant !== undefined) return evaluation.variant;
  if (typeof evaluation.value === "boolean") return evaluation.value ? "on" : "off";
  return JSON.stringify(evaluation.value);
}
