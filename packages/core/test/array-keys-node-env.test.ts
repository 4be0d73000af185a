import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, stateHash } from "@statesync/core";

/**
 * Immer refuses a key of an array draft that is not an index only in development builds (it
 * reads `NODE_ENV` at each write). A checked command writing `list.foo` after another write was
 * a no-op on a replica in development and applied, with its other write, on one in production
 * (a browser bundle): one revision, two states (a fresh-eyes helper, stop 20). The outcome must
 * not depend on `NODE_ENV`.
 */
const model = defineModel({
  name: "array-keys",
  state: z.object({ n: z.number(), list: z.array(z.number()) }),
  initial: { n: 0, list: [1] },
  commands: {
    named: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
        (d.list as unknown as Record<string, number>).foo = 1;
      },
    },
    unnamed: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
        delete (d.list as unknown as Record<string, number>).foo;
      },
    },
    inc: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
      },
    },
  },
});

const env = process.env.NODE_ENV;
afterEach(() => {
  process.env.NODE_ENV = env;
});

/** Writer and a fresh catch-up under `nodeEnv`: each one's state hash and failed revisions. */
async function run(nodeEnv: string) {
  process.env.NODE_ENV = nodeEnv;
  const log = new MemoryLog();
  const failed: number[] = [];
  const writer = await createSynchronizer({ log, model });
  for (const c of ["named", "unnamed", "inc"] as const) {
    await writer.updateUnconditionally(c, {}).catch((e: { details?: { revision?: number } }) => {
      failed.push(e.details?.revision ?? -1);
    });
  }
  const fresh = await createSynchronizer({ log: log.handle(), model });
  const out = {
    writer: stateHash(writer.state),
    fresh: stateHash(fresh.state),
    n: writer.state.n,
    failed,
  };
  await Promise.all([writer.close(), fresh.close()]);
  return out;
}

describe("a command writing a key of an array that is not an index", () => {
  it("is a no-op in development and production builds alike", async () => {
    const dev = await run("development");
    const prod = await run("production");
    expect(dev.writer).toBe(dev.fresh);
    expect(prod.writer).toBe(prod.fresh);
    expect(prod).toEqual(dev);
    expect(dev.n).toBe(1); // only `inc` applied
    expect(dev.failed).toHaveLength(2);
  });
});
