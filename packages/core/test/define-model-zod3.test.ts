import { describe, expect, it } from "vitest";
import { z as z3 } from "zod/v3";
import { defineModel } from "@statesync/core";

/**
 * A zod 3 schema is not one statesync can read (it needs zod 4's API, which zod 3.25 ships as
 * "zod/v4"). A new user's plain-JS app got "model state must be a zod schema" for one, which it
 * is: the message says which zod and how to get it.
 */
describe("defineModel with a zod 3 schema", () => {
  it("is VALIDATION naming zod 4 and the zod/v4 import", () => {
    const define = () =>
      defineModel({ name: "old", state: z3.object({}) as never, initial: {}, commands: {} });
    expect(define).toThrow(expect.objectContaining({ code: "VALIDATION" }));
    expect(define).toThrow(/zod 4 schema \(with zod 3\.25, import z from "zod\/v4"/);
  });
});
