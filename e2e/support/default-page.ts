import { build } from "esbuild";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

let bundle: Promise<string> | undefined;

/** default-page/main.ts bundled for the browser (esbuild, once per worker). */
function pageScript(): Promise<string> {
  bundle ??= build({
    entryPoints: [fileURLToPath(new URL("./default-page/main.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    // nats.ws 1.x has a guarded require('crypto') it never takes in a browser (README).
    external: ["crypto"],
    logLevel: "silent",
  }).then((result) => result.outputFiles[0]!.text);
  return bundle;
}

/** A server of the default-options page (see {@link serveDefaultPage}). */
export interface DefaultPageServer {
  /** The page's address for a replica of `stream` on the nats-server at `wsUrl`. */
  url(wsUrl: string, stream: string): string;
  close(): Promise<void>;
}

/**
 * Serves default-page/main.ts on 127.0.0.1 (a free port). A real local server rather than a
 * Playwright route: Chromium treats a routed page as public and its Local Network Access check
 * then blocks the page's WebSocket to the local nats-server.
 */
export async function serveDefaultPage(): Promise<DefaultPageServer> {
  const script = await pageScript();
  const server = createServer((request, response) => {
    if (request.url?.startsWith("/main.js")) {
      response.writeHead(200, { "content-type": "text/javascript" }).end(script);
    } else {
      response
        .writeHead(200, { "content-type": "text/html" })
        .end('<!doctype html><meta charset="utf-8"><script type="module" src="/main.js"></script>');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (wsUrl, stream) =>
      `http://127.0.0.1:${port}/?server=${encodeURIComponent(wsUrl)}&stream=${encodeURIComponent(stream)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
