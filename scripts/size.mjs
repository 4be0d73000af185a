/* global process, console */
// Bundle size of @statesync/core + @statesync/browser for browsers (npm run size).
// Bundles the built entry points with esbuild for platform "browser" (which fails on any Node
// built-in), minified, with nats.ws, immer, zod and idb left out (an app has them anyway, and
// they dominate), and prints raw and gzipped bytes. Everything exported is kept, so an app that
// imports less ships less.
//
// The bundle is split (`splitting: true`), as an app's bundler splits it: code that the SDK loads
// with a dynamic `import()` only on a rare path (the fan-out follower, ...) lands in chunks of
// its own. Two figures per entry: "at open" is the entry file and every chunk it imports
// statically (what a page loads before it runs), "total" adds the chunks loaded on demand. Each
// file is gzipped on its own, as a server sends it. The budget is judged on "at open" (README,
// "Bundle size"); "total" says what an app that uses everything pays in all.
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const external = ["nats.ws", "immer", "zod", "idb", "react", "react-dom"];
const entries = {
  "@statesync/core": 'export * from "@statesync/core";',
  "@statesync/browser (includes core)": 'export * from "@statesync/browser";',
  "@statesync/browser/react": 'export * from "@statesync/browser/react";',
  "typical app: open + defineModel + hooks":
    'export { openSynchronizer, defineModel } from "@statesync/browser";\n' +
    'export { useSynchronizedState, useSyncStatus } from "@statesync/browser/react";',
  "the same + offline queue (offlineQueue)":
    'export { openSynchronizer, defineModel } from "@statesync/browser";\n' +
    'export { useSynchronizedState, useSyncStatus } from "@statesync/browser/react";\n' +
    'export { offlineQueue } from "@statesync/browser/offline";',
};
const verbose = process.argv.includes("--inputs");

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
let failed = false;
const outdir = mkdtempSync(join(tmpdir(), "statesync-size-"));
console.log(`${"".padEnd(40)} ${"at open".padStart(21)}    ${"total".padStart(21)}`);
for (const [name, contents] of Object.entries(entries)) {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "js", sourcefile: "entry.js" },
    bundle: true,
    minify: true,
    format: "esm",
    splitting: true,
    outdir,
    platform: "browser",
    target: "es2022",
    external,
    write: false,
    metafile: true,
    logLevel: "silent",
  }).catch((err) => {
    failed = true;
    console.error(`${name}: does not bundle for the browser\n${err.message}`);
    return undefined;
  });
  if (!result) continue;
  const nodeInputs = Object.keys(result.metafile.inputs).filter((p) => p.startsWith("node:"));
  if (nodeInputs.length > 0) {
    failed = true;
    console.error(`${name}: pulls in Node built-ins: ${nodeInputs.join(", ")}`);
  }
  // Output paths in the metafile are relative to the working directory; files carry absolute ones.
  const files = new Map(result.outputFiles.map((f) => [f.path, f.contents]));
  const outputs = result.metafile.outputs;
  const contentsOf = (rel) => files.get(join(process.cwd(), rel));
  const entry = Object.keys(outputs).find((p) => outputs[p].entryPoint !== undefined);
  // Everything the entry imports statically, transitively: what loads at open.
  const atOpen = new Set();
  const visit = (p) => {
    if (atOpen.has(p)) return;
    atOpen.add(p);
    for (const imp of outputs[p].imports) {
      if (imp.kind === "import-statement" && !imp.external) visit(imp.path);
    }
  };
  visit(entry);
  const sizes = (paths) => {
    let raw = 0;
    let gz = 0;
    for (const p of paths) {
      const c = contentsOf(p);
      raw += c.length;
      gz += gzipSync(c, { level: 9 }).length;
    }
    return `${kib(raw).padStart(10)} ${kib(gz).padStart(10)}`;
  };
  const js = Object.keys(outputs).filter((p) => p.endsWith(".js"));
  console.log(`${name.padEnd(40)} ${sizes(atOpen)}    ${sizes(js)}`);
  if (verbose) {
    for (const p of js) {
      const inputs = Object.entries(outputs[p].inputs)
        .filter(([, v]) => v.bytesInOutput > 0)
        .sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)
        .map(([i, v]) => `${i.replace(/^.*packages\//, "")} ${v.bytesInOutput}`);
      console.log(`  ${atOpen.has(p) ? "at open" : "on demand"}: ${inputs.join(", ")}`);
    }
  }
}
rmSync(outdir, { recursive: true, force: true });
console.log("(columns: minified, gzipped; each file gzipped on its own)");
console.log(`(external: ${external.join(", ")}; --inputs lists each file's sources)`);
process.exit(failed ? 1 : 0);
