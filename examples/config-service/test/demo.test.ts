import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const demo = fileURLToPath(new URL("../dist/demo.js", import.meta.url));

function run(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [demo], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

it("runs the demo end to end: every replica identical, expected values served", async () => {
  expect(existsSync(demo), "build first: npx tsc -b examples/config-service").toBe(true);
  const { code, output } = await run();
  expect(code, output).toBe(0);
  expect(output).toMatch(/feature-flags: 5 replicas identical: rev \d+, hash [0-9a-f]{64}/);
  expect(output).toMatch(/membership {3}: 4 replicas identical: rev \d+, hash [0-9a-f]{64}/);
  expect(output).toMatch(/every replica serves the \d+ expected values/);
  expect(output).toMatch(/attempts [2-9]: conflicted, retried/);
  expect(output).toMatch(/rejected: "pink" is not a variant/);
  expect(output).toContain("OK: all replicas identical");
});
