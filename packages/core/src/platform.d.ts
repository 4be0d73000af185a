/* eslint-disable no-var -- ambient global declarations must use var */
/**
 * The few globals core uses, which Node >= 20 and every browser provide alike. Declared here
 * instead of pulling in the DOM or Node type libraries, so core cannot use anything else by
 * accident. Not emitted: consumers get these types from their own lib (DOM or @types/node).
 */
declare function setTimeout(callback: (...args: any[]) => void, ms?: number): any;
declare function clearTimeout(handle: any): void;
declare function queueMicrotask(callback: () => void): void;

declare class TextEncoder {
  encode(input?: string): Uint8Array;
}
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: Uint8Array): string;
}

interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: any;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}
declare var AbortSignal: { prototype: AbortSignal; new (): AbortSignal };

declare class AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

declare var crypto: {
  getRandomValues<T extends Uint8Array | Uint32Array>(array: T): T;
};

declare var console: { warn(...args: unknown[]): void };

/** A monotonic clock in ms with sub-ms resolution (the cost of a draft: `applyBatch`). */
declare var performance: { now(): number };
