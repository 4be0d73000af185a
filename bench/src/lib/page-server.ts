import { build } from "esbuild";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

/**
 * The browser benchmarks' page (`browser-*-page.ts` of `bench/src`): bundled for the browser as
 * one ES module (`crypto` left to the page), `alias` replacing imports (another checkout's
 * `@statesync/browser`, say). Returns the script's text.
 */
export async function bundlePage(entry: string, alias: Record<string, string> = {}) {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../../src/${entry}`, import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    external: ["crypto"],
    logLevel: "silent",
    alias,
  });
  return result.outputFiles[0]!.text;
}

/**
 * Serves `script` as `/main.js` and a page that loads it on every other path, on a free port of
 * 127.0.0.1. Returns `base` (`http://127.0.0.1:<port>`) and `close()`.
 */
export async function servePage(script: string): Promise<{ base: string; close(): void }> {
  const http = createServer((req, res) => {
    if (req.url?.startsWith("/main.js"))
      res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    else
      res
        .writeHead(200, { "content-type": "text/html" })
        .end('<!doctype html><script type="module" src="/main.js"></script>');
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return { base, close: () => void http.close() };
}
