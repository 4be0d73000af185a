/* global process, console */
// Copies the TypeScript examples of the READMEs into a scratch app's src/, so the install test
// type-checks and runs exactly what the documentation shows. A ```ts or ```tsx block is an
// example when its first line names its file (`// counter.ts`); it lands in
// src/<readme>/<file>, so examples of one README can import each other (`./counter.js`).
// Usage: node extract-examples.mjs REPO_ROOT APP_DIR [--zod-v4-subpath]
// --zod-v4-subpath rewrites `from "zod"` to `from "zod/v4"` (what a zod 3.25 app writes).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [root, app, flag] = process.argv.slice(2);
if (!root || !app)
  throw new Error("usage: extract-examples.mjs REPO_ROOT APP_DIR [--zod-v4-subpath]");
const readmes = {
  root: "README.md",
  core: "packages/core/README.md",
  node: "packages/node/README.md",
  browser: "packages/browser/README.md",
};
const block = /^```tsx?\n\/\/ ([\w.-]+\.tsx?)\n([\s\S]*?)^```$/gm;
let count = 0;
for (const [name, file] of Object.entries(readmes)) {
  const text = readFileSync(join(root, file), "utf8");
  for (const [, fileName, body] of text.matchAll(block)) {
    const source =
      flag === "--zod-v4-subpath" ? body.replaceAll('from "zod";', 'from "zod/v4";') : body;
    mkdirSync(join(app, "src", name), { recursive: true });
    writeFileSync(join(app, "src", name, fileName), source);
    count += 1;
  }
}
if (count === 0) throw new Error("no examples found in the READMEs");
console.log(`extracted ${count} README examples`);
