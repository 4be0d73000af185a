/**
 * The bound on consumer reads of a fan-out log (docs/fanout.md): at most {@link CONSUMER_FILLS}
 * range reads (each an ordered consumer that lives for that read only) run at once per process
 * ({@link boundedRead}), so that thousands of followers recovering after a server restart do not
 * create thousands of consumers at one instant. How a gap is read is in fanout-gap-read.ts.
 */

/** Consumer reads (gap fills) running at once in one process, over all followers. */
export const CONSUMER_FILLS = 8;

/** A counting semaphore: `run` waits for a free slot. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((r) => this.waiting.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }
}

const consumerSlots = new Slots(CONSUMER_FILLS);

/**
 * A range read that waits for one of the process's {@link CONSUMER_FILLS} slots first: every
 * range read of a fan-out log (gap fills, and the engine's catch-ups after a reconnection) goes
 * through it.
 */
export async function* boundedRead<T>(read: () => AsyncIterable<T>): AsyncGenerator<T> {
  const release = await consumerSlots.acquire();
  try {
    yield* read();
  } finally {
    release();
  }
}
