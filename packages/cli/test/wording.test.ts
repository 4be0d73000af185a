import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBackupText } from "../src/backup.js";
import { loadModel } from "../src/model-file.js";

/**
 * Failures read in operators' words (a fresh-eyes trial): a model module that throws a string
 * read `could not be loaded: undefined`, and a backup file of another format leaked zod's
 * wording (`format Invalid input: expected "statesync-backup"`).
 */
describe("failure wording", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "statesync-wording-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("names what a model module threw, an Error or not", async () => {
    const strings = path.join(dir, "throws-string.mjs");
    await writeFile(strings, 'throw "config missing";\n');
    await expect(loadModel(strings)).rejects.toThrow(
      `--model ${strings} could not be loaded: config missing`,
    );
    const object = path.join(dir, "throws-object.mjs");
    await writeFile(object, "throw { reason: 42 };\n");
    await expect(loadModel(object)).rejects.toThrow(
      `--model ${object} could not be loaded: {"reason":42}`,
    );
  });

  it("says what is wrong with a backup file without zod's wording", () => {
    const cases: Array<[unknown, string]> = [
      [{ format: "other" }, 'format is "other", not "statesync-backup"'],
      [{ format: "statesync-backup", formatVersion: 9 }, "formatVersion is 9, not 1"],
      [
        { format: "statesync-backup", formatVersion: 1, created: 5 },
        "created must be a string, not a number",
      ],
      [{ format: "statesync-backup", formatVersion: 1 }, "created is missing"],
    ];
    for (const [doc, problem] of cases) {
      expect(() => readBackupText(JSON.stringify(doc), "b.json")).toThrow(
        `b.json is not a statesync backup: ${problem}`,
      );
    }
    expect(() => readBackupText("[]", "b.json")).toThrow(
      "b.json is not a statesync backup: the document must be an object, not an array",
    );
  });
});
