import { afterEach } from "vitest";
import type { LockManagerLike, TokenStore } from "@statesync/browser";

/** An in-process stand-in for `navigator.locks` (Node has no Web Locks): FIFO per name. */
export class FakeLocks implements LockManagerLike {
  private readonly held = new Set<string>();
  private readonly waiting = new Map<string, Array<() => void>>();

  async request(name: string, callback: (lock: unknown) => Promise<void>): Promise<unknown> {
    if (this.held.has(name)) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(name) ?? [];
        queue.push(resolve);
        this.waiting.set(name, queue);
      });
    }
    this.held.add(name);
    try {
      return await callback({ name });
    } finally {
      const next = this.waiting.get(name)?.shift();
      if (next) next();
      else this.held.delete(name);
    }
  }
}

/** An in-process stand-in for `localStorage`. */
export class FakeStorage implements TokenStore {
  private readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
}

/**
 * A `BroadcastChannel` whose tab can be frozen: while frozen, nothing it posts goes out and what
 * arrives waits (as a frozen page's event loop does); `thaw()` delivers what waited.
 */
export class FreezableChannel {
  private readonly inner: BroadcastChannel;
  private frozen = false;
  private held: unknown[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;

  constructor(name: string) {
    this.inner = new BroadcastChannel(name);
    this.inner.onmessage = (e: MessageEvent) => {
      if (this.frozen) this.held.push(e.data);
      else this.onmessage?.(e);
    };
  }
  postMessage(message: unknown): void {
    if (!this.frozen) this.inner.postMessage(message);
  }
  close(): void {
    this.inner.close();
  }
  freeze(): void {
    this.frozen = true;
  }
  thaw(): void {
    this.frozen = false;
    for (const data of this.held.splice(0)) this.onmessage?.({ data } as MessageEvent);
  }
}

/**
 * What a test opened, closed after each test in reverse order (errors ignored): push a closer
 * per tab or synchronizer opened.
 */
export function closeAfterEach(): Array<() => Promise<unknown>> {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
  });
  return closing;
}
