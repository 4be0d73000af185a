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
const byModule = process.argv.includes("--by-module");

/**
 * What each source costs gzipped (`--by-module`): the entry bundled in one file with a source
 * map, and for each source the gzipped size of the bundle less that of the bundle with the bytes
 * the map gives that source taken out (what leaving it out would save, about). Minified bytes
 * beside it.
 */
async function costByModule(contents) {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "js", sourcefile: "entry.js" },
    bundle: true,
    minify: true,
    format: "esm",
    outfile: join(outdir, "by-module.js"),
    platform: "browser",
    target: "es2022",
    external,
    write: false,
    sourcemap: "external",
    logLevel: "silent",
  });
  const code = result.outputFiles.find((f) => f.path.endsWith(".js")).text;
  const map = JSON.parse(result.outputFiles.find((f) => f.path.endsWith(".map")).text);
  const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const vlq = (segment) => {
    const out = [];
    let value = 0;
    let shift = 0;
    for (const ch of segment) {
      const d = digits.indexOf(ch);
      value += (d & 31) << shift;
      if (d & 32) shift += 5;
      else {
        out.push(value & 1 ? -(value >> 1) : value >> 1);
        value = 0;
        shift = 0;
      }
    }
    return out;
  };
  // The source of each byte of the output (-1: none).
  const owner = new Int32Array(code.length).fill(-1);
  const lines = code.split("\n");
  let lineStart = 0;
  let source = 0;
  map.mappings.split(";").forEach((line, i) => {
    let column = 0;
    const segments = line
      .split(",")
      .filter(Boolean)
      .map((seg) => {
        const v = vlq(seg);
        column += v[0];
        if (v.length > 1) source += v[1];
        return [column, v.length > 1 ? source : -1];
      });
    segments.forEach(([c, src], k) => {
      const end = k + 1 < segments.length ? segments[k + 1][0] : lines[i].length;
      owner.fill(src, lineStart + c, lineStart + end);
    });
    lineStart += lines[i].length + 1;
  });
  const total = gzipSync(code, { level: 9 }).length;
  const rows = [];
  for (let src = 0; src < map.sources.length; src++) {
    let kept = "";
    let bytes = 0;
    for (let i = 0; i < code.length; i++) {
      if (owner[i] === src) bytes++;
      else kept += code[i];
    }
    if (bytes === 0) continue;
    const name = map.sources[src].replace(/^.*(packages|node_modules)\//, "$1/");
    rows.push([name, bytes, total - gzipSync(kept, { level: 9 }).length]);
  }
  rows.sort((a, b) => b[2] - a[2]);
  for (const [name, bytes, gz] of rows) {
    console.log(`  ${String(gz).padStart(6)} B gz ${String(bytes).padStart(7)} B  ${name}`);
  }
}

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
  if (byModule) await costByModule(contents);
}
rmSync(outdir, { recursive: true, force: true });
console.log("(columns: minified, gzipped; each file gzipped on its own)");
console.log(
  `(external: ${external.join(", ")}; --inputs lists each file's sources; --by-module what` +
    " each source costs gzipped: the gzipped bundle less the bundle without its bytes)",
);
process.exit(failed ? 1 : 0);
