/* global process, console */
// Bundle size of @statesync/core + @statesync/browser for browsers (npm run size).
// Bundles the built entry points with esbuild for platform "browser" (which fails on any Node
// built-in), minified, with nats.ws, immer, zod and idb left out (an app has them anyway, and
// they dominate), and prints raw and gzipped bytes. Everything exported is kept, so an app that
// imports less ships less.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";

const external = ["nats.ws", "immer", "zod", "idb", "react", "react-dom"];
const entries = {
  "@statesync/core": 'export * from "@statesync/core";',
  "@statesync/browser (includes core)": 'export * from "@statesync/browser";',
  "@statesync/browser/react": 'export * from "@statesync/browser/react";',
  "typical app: open + defineModel + hooks":
    'export { openSynchronizer, defineModel } from "@statesync/browser";\n' +
    'export { useSynchronizedState, useSyncStatus } from "@statesync/browser/react";',
};

let failed = false;
for (const [name, contents] of Object.entries(entries)) {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
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
  const code = result.outputFiles[0].contents;
  const nodeInputs = Object.keys(result.metafile.inputs).filter((p) => p.startsWith("node:"));
  if (nodeInputs.length > 0) {
    failed = true;
    console.error(`${name}: pulls in Node built-ins: ${nodeInputs.join(", ")}`);
  }
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(
    `${name.padEnd(40)} ${kib(code.length).padStart(10)} min ${kib(gzipSync(code, { level: 9 }).length).padStart(10)} gzip`,
  );
}
console.log(`(external: ${external.join(", ")})`);
process.exit(failed ? 1 : 0);
