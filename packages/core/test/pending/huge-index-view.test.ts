import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
} from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod";

/**
 * Regression test (stop 21): the optimistic view ran a queued command on a bare Immer draft, so a
 * command writing index 1e9 (arguments that pass its schema) cost Immer a walk of 1e9 indices
 * each time the view was computed: `optimisticState` did not answer for about 34 s. It is now
 * left out of the view at once (and refused when pushed), as the writer refuses it.
 */
const model = defineModel({
  name: "far-view",
  state: z.object({ list: z.array(z.number()) }),
  initial: { list: [] },
  commands: {
    set: {
      args: z.object({ i: z.number().int().nonnegative(), v: z.number() }),
      apply(d, { i, v }) {
        d.list[i] = v;
      },
    },
  },
});

it("leaves a queued command that would leave holes out of the optimistic view; it is refused when pushed", async () => {
  const log = new MemoryLog();
  const sync = await createSynchronizer({
    log,
    model,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device-1" }),
  });
  log.setOffline(true);
  const far = sync.update("set", { i: 1_000_000_000, v: 1 });
  const refused = far.then(
    () => undefined,
    (e: { code: string }) => e.code,
  );
  const near = sync.update("set", { i: 0, v: 2 });
  expect(sync.optimisticState.list).toEqual([2]);
  log.setOffline(false);
  await near;
  expect(await refused).toBe("UPDATE_REFUSED");
  expect(sync.state.list).toEqual([2]);
  await sync.close();
});
