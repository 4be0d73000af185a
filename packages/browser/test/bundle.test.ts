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
    // What of core ends up in the bundle (its modules with bytes in the output): the React entry
    // takes only StateSyncError, for its refusal of wrong options (a hook's check; the engine
    // comes with the app's own import of the package).
    const [output] = Object.values(result.metafile.outputs);
    const fromCore = Object.entries(output!.inputs)
      .filter(([p, { bytesInOutput }]) => p.includes("packages/core/dist") && bytesInOutput > 0)
      .map(([p]) => p.slice(p.indexOf("packages/core/dist/")));
    if (entry === "@statesync/browser") expect(fromCore.length).toBeGreaterThan(10);
    else expect(fromCore).toEqual(["packages/core/dist/errors.js"]);
  },
);
