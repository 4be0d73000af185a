// What statesync asks of zod at run time, checked against this app's zod (run with the README
// examples): toJSONSchema refusing non-JSON state schemas, instanceof on schemas, prettifyError
// in VALIDATION messages, and a strictObject state refusing keys it does not declare.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createSynchronizer, defineModel, isStateSyncError, MemoryLog } from "@statesync/node";
import { z } from "zod/v4";

const refusesWith = async (run: () => unknown, pattern: RegExp) => {
  await assert.rejects(
    async () => run(),
    (error: unknown) => {
      assert.ok(isStateSyncError(error, "VALIDATION"), `expected VALIDATION, got ${String(error)}`);
      assert.match(error.message, pattern);
      return true;
    },
  );
};

await refusesWith(
  () =>
    defineModel({
      name: "dated",
      // @ts-expect-error a non-JSON state is a type error too, with this app's zod
      state: z.object({ at: z.date() }),
      initial: { at: new Date(0) },
      commands: {},
    }),
  /not JSON/,
);
await refusesWith(
  () => defineModel({ name: "plain", state: {} as z.ZodType<object>, initial: {}, commands: {} }),
  /must be a zod 4 schema/,
);

const notes = defineModel({
  name: "notes",
  state: z.strictObject({ notes: z.array(z.string()) }),
  initial: { notes: [] },
  commands: {
    add: {
      args: z.object({ text: z.string().min(1) }),
      apply(draft, { text }) {
        draft.notes.push(text);
      },
    },
  },
});
const sync = await createSynchronizer({ log: new MemoryLog(), model: notes, snapshots: false });
await refusesWith(() => sync.update("add", { text: "" }), /→ at text/);
await refusesWith(
  () =>
    sync.update((draft) => {
      (draft as Record<string, unknown>).extra = 1;
    }),
  /extra/,
);
await refusesWith(
  // @ts-expect-error an async recipe is a type error too
  () => sync.update(async () => undefined),
  /synchronous/,
);
await sync.update("add", { text: "kept" });
assert.deepEqual(sync.state, { notes: ["kept"] });
await sync.close();
const zod = JSON.parse(readFileSync("node_modules/zod/package.json", "utf8")) as {
  version: string;
};
console.log(
  `zod ${zod.version}: toJSONSchema, instanceof, prettifyError, strictObject as expected`,
);
