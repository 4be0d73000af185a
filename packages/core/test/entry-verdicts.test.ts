import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel, EntryVerdicts, type Entry } from "@statesync/core";
import { encodeEntry } from "../src/entry.js";

/**
 * `EntryVerdicts` (what the CLI's `history --model` and `tail --model` print): the verdict of the
 * engine's `Replay` on each entry, including a re-sent queued update (a no-op no error reports).
 */
const model = defineModel({
  name: "verdicts",
  state: z.object({ n: z.number().int() }),
  initial: { n: 0 },
  commands: {
    add: {
      args: z.object({ by: z.number().int() }),
      apply(d, { by }) {
        d.n += by;
      },
    },
  },
});

const head = { v: 2, ts: 1, client: "c" } as const;
const update = (base: number, origin?: [string, number]): Entry => ({
  ...head,
  kind: "update",
  base,
  seed: 1,
  patches: [{ op: "replace", path: ["n"], value: base }],
  ...(origin && { origin }),
});
const command = (name: string, args: unknown): Entry => ({
  ...head,
  kind: "command",
  seed: 1,
  name,
  args,
});

describe("EntryVerdicts", () => {
  it("gives the replay's verdict on each entry, and unreached after a stop", () => {
    const entries: Entry[] = [
      { ...head, kind: "genesis", model: model.name, version: 1, initialHash: model.initialHash },
      update(1, ["q", 1]), // 2
      update(2, ["q", 1]), // 3: re-sent, already applied
      update(1), // 4: stale base
      command("add", { by: 0.5 }), // 5: fails the args' schema
      command("add", { by: 2 }), // 6
      command("nope", {}), // 7: unknown
      command("add", { by: 1 }), // 8
    ];
    const verdicts = new EntryVerdicts(model, true);
    const got = entries.map((e, i) =>
      verdicts.next({ revision: i + 1, data: encodeEntry(e), messageId: `m${i}` }),
    );
    expect(got.map((v) => v.kind)).toEqual([
      "applied",
      "applied",
      "no-op",
      "skipped",
      "no-op",
      "applied",
      "stops",
      "unreached",
    ]);
    expect(got[2]).toEqual({ kind: "no-op", duplicate: true });
    expect(got[3]).toMatchObject({ error: { code: "CORRUPT_ENTRY" } });
    expect(got[4]).toMatchObject({ error: { code: "VALIDATION" } });
    expect(got[6]).toMatchObject({ error: { code: "UNKNOWN_COMMAND" } });
    expect(got[7]).toEqual({ kind: "unreached", stoppedAt: 7 });
  });

  describe("a state that fails to migrate to the model's version", () => {
    // Version 2 refuses a version-1 state with a negative n.
    const v2 = defineModel({
      name: "verdicts",
      version: 2,
      predecessor: model,
      migrate: (s: { n: number }) => {
        if (s.n < 0) throw new Error("negative");
        return s;
      },
      state: model.state,
      initial: model.initial,
      commands: model.commands,
    });
    const genesis: Entry = {
      ...head,
      kind: "genesis",
      model: model.name,
      version: 1,
      initialHash: model.initialHash,
    };
    const verdictsOf = (entries: Entry[]) => {
      const verdicts = new EntryVerdicts(v2, true);
      const got = entries.map((e, i) =>
        verdicts.next({ revision: i + 1, data: encodeEntry(e), messageId: `m${i}` }),
      );
      return { kinds: got.map((v) => v.kind), got, end: verdicts.end() };
    };

    it("may stop some replicas when a later plain entry repairs it, and the replay goes on", () => {
      const { kinds, got, end } = verdictsOf([
        genesis,
        command("add", { by: -1 }), // 2: fails to migrate
        command("add", { by: -1 }), // 3: still
        command("add", { by: 5 }), // 4: repaired
        command("add", { by: 1 }), // 5
      ]);
      expect(kinds).toEqual(["applied", "may-stop", "applied", "applied", "applied"]);
      expect(got[1]).toMatchObject({ error: { code: "VALIDATION" } });
      expect(end).toBeUndefined();
    });

    it("stops every replica at the first failing state when the log ends before a repair", () => {
      const { kinds, end } = verdictsOf([
        genesis,
        command("add", { by: -1 }),
        command("add", { by: 0 }),
      ]);
      expect(kinds).toEqual(["applied", "may-stop", "applied"]);
      expect(end).toMatchObject({ stoppedAt: 2, error: { code: "VALIDATION" } });
    });

    it("stops every replica there when another kind of entry ends the run before a repair", () => {
      // A stale update ends every replica's run of plain entries: the run's end state is checked.
      const { kinds, end } = verdictsOf([
        genesis,
        command("add", { by: -1 }), // 2
        update(1), // 3: stale base, skipped
        command("add", { by: 5 }), // 4
      ]);
      expect(kinds).toEqual(["applied", "may-stop", "unreached", "unreached"]);
      expect(end).toMatchObject({ stoppedAt: 2 });
    });
  });
});
