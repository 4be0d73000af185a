import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/node";
import { schemaProblem } from "../src/commands/state.js";

/**
 * The CLI checks states against the operator's model (`state`, `export`, `import`, `verify`):
 * a refinement of that model that throws is the state failing the schema, reported as such,
 * not the model's raw error ending the command (`INTERNAL`).
 */
describe("the CLI's check of a state against a schema that throws", () => {
  const model = defineModel({
    name: "counter",
    state: z.object({
      n: z.number().refine((n) => {
        if (n === 13) throw new Error("unlucky");
        return true;
      }),
    }),
    initial: { n: 0 },
    commands: {},
  });

  it("says the state fails it, naming what threw", () => {
    expect(schemaProblem(model as never, { n: 1 })).toBeUndefined();
    expect(schemaProblem(model as never, { n: 13 })).toMatch(/the schema threw: Error: unlucky/);
  });
});
