import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { openSynchronizer } from "@statesync/node";
import { uniqueStream, useNatsServer } from "./helpers.js";

/**
 * `stateAt` across a switch (docs/versions.md, "The switch") on a real nats-server, both layouts:
 * a version-1 state that version 2's `migrate` refuses only in passing (written, then repaired
 * before the switch) must not stand in the way of the revisions at and after the switch, which
 * the switch entry's carried state answers. Found by a fresh-eyes trial: `stateAt(5)` and
 * `stateAt(6)` rejected `VALIDATION ... cannot migrate poison (entry at revision 3)` on the
 * very replica that wrote the switch, and on every fresh version-2 replica.
 */
/** `add`, for any state with `cards`. */
const add = <S extends { cards: string[] }>() => ({
  args: z.object({ text: z.string() }),
  apply(d: S, { text }: { text: string }) {
    d.cards.push(text);
  },
});

const boardV1 = defineModel({
  name: "board",
  version: 1,
  state: z.object({ cards: z.array(z.string()) }),
  initial: { cards: [] as string[] },
  commands: { add: add<{ cards: string[] }>() },
});

const boardV2 = defineModel({
  name: "board",
  version: 2,
  state: z.object({ cards: z.array(z.string()), tags: z.array(z.string()) }),
  initial: { cards: [] as string[], tags: [] as string[] },
  commands: {
    add: add<{ cards: string[]; tags: string[] }>(),
    tag: {
      args: z.object({ t: z.string() }),
      apply(d, { t }) {
        d.tags.push(t);
      },
    },
  },
  predecessor: boardV1,
  migrate: (s: { cards: string[] }) => {
    if (s.cards.includes("poison")) throw new Error("cannot migrate poison");
    return { ...s, tags: [] };
  },
});

const ctx = useNatsServer();
const layouts = [
  { name: "own stream", options: (s: string) => ({ stream: s }) },
  { name: "shared stream", options: (s: string) => ({ stream: "SHARED_SA", key: `t.${s}` }) },
];

for (const layout of layouts) {
  describe(`stateAt across a switch, ${layout.name}`, () => {
    it("answers at and after the switch from its carried state, a pre-switch state that failed to migrate in passing notwithstanding", async () => {
      const base = { servers: ctx.server.url, snapshots: false as const };
      const target = { ...base, ...layout.options(uniqueStream("SA")) };
      const a = await openSynchronizer({ ...target, model: boardV1 });
      await a.update("add", { text: "ok" }); // 2
      await a.update("add", { text: "poison" }); // 3: v2's migrate throws on this state
      await a.update((d) => {
        d.cards = ["ok"]; // 4: repaired
      });
      await a.close();
      const b = await openSynchronizer({ ...target, model: boardV2 }); // switch at 5
      await b.update("tag", { t: "x" }); // 6
      expect(b.revision).toBe(6);
      const history = await b.history();
      const switchAt = history.find((e) => e.kind === "switch")!.revision;
      const at = (i: number) => history[i - 1]!.revision; // the i-th entry's revision

      const expectStates = async (r: typeof b) => {
        expect(await r.stateAt(switchAt)).toEqual({ cards: ["ok"], tags: [] });
        expect(await r.stateAt(b.revision)).toEqual({ cards: ["ok"], tags: ["x"] });
        // Before the switch: the version-1 state at that revision, migrated up.
        expect(await r.stateAt(at(2))).toEqual({ cards: ["ok"], tags: [] });
        expect(await r.stateAt(at(4))).toEqual({ cards: ["ok"], tags: [] });
        // The state that does not migrate: VALIDATION naming its revision.
        await expect(r.stateAt(at(3))).rejects.toMatchObject({
          code: "VALIDATION",
          details: { revision: at(3) },
          message: expect.stringMatching(/cannot migrate poison/),
        });
      };
      await expectStates(b);
      // A fresh version-2 replica starts from the switch entry, and answers alike.
      const c = await openSynchronizer({ ...target, model: boardV2 });
      expect(c.state).toEqual({ cards: ["ok"], tags: ["x"] });
      await expectStates(c);
      await b.close();
      await c.close();
    });
  });
}
