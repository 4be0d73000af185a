// Core and browser bundle for browsers: no Node built-in anywhere in their import graph. (Their
// big dependencies are left out: nats.ws's bundle holds a guarded `require("crypto")` for Node,
// which browser bundlers such as Vite leave alone.)
import { build } from "esbuild";
import { expect, it } from "vitest";

it.each(["@statesync/browser", "@statesync/browser/react"])(
  "%s bundles for platform browser without Node built-ins",
  async (entry) => {
    const result = await build({
      stdin: { contents: `export * from "${entry}";`, resolveDir: process.cwd(), loader: "js" },
      bundle: true,
      format: "esm",
      platform: "browser",
      external: ["react", "react-dom", "nats.ws", "immer", "zod", "idb"],
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((p) => p.startsWith("node:") || /^(fs|path|crypto|os)$/.test(p))).toEqual(
      [],
    );
    expect(inputs.some((p) => p.includes("packages/core/dist"))).toBe(
      entry === "@statesync/browser",
    );
  },
);
