import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, type StateSyncError } from "@statesync/core";

/**
 * Errors say what to do (a new user's trial: a Date written into the state read only
 * "$.items[1]: not a plain object"; an unknown command did not list the model's commands).
 */
const model = defineModel({
  name: "board",
  state: z.object({ items: z.array(z.unknown()) }),
  initial: { items: [] as unknown[] },
  commands: {
    add: { args: z.object({}), apply: () => undefined },
    remove: { args: z.object({}), apply: () => undefined },
  },
});

const codeAndMessage = (e: unknown) => [(e as StateSyncError).code, (e as Error).message];

describe("error hints", () => {
  it("a Date, a Map or a class instance in the state is named, with what to store instead", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model, snapshots: false });
    for (const [value, says] of [
      [
        new Date(0),
        /\$\.items\[0\]: a Date, not a plain object \(store a Date as its toISOString\(\) or getTime\(\)\)/,
      ],
      [new Map(), /a Map, not a plain object \(store it as an array or a plain object\)/],
      [new (class Point {})(), /a Point, not a plain object/],
    ] as const) {
      const refused = (await sync
        .update((d) => {
          d.items.push(value);
        })
        .catch(codeAndMessage)) as string[];
      expect(refused[0]).toBe("VALIDATION");
      expect(refused[1]).toMatch(says);
    }
    await sync.close();
  });

  it("an unknown command lists the commands the model has", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model, snapshots: false });
    const refused = await sync.update("nope" as never, {} as never).catch(codeAndMessage);
    expect(refused).toEqual([
      "UNKNOWN_COMMAND",
      'model board has no command "nope" (it has add, remove)',
    ]);
    await sync.close();
  });
});
