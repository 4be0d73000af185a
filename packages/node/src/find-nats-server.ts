/**
 * Finding what a throwaway nats-server needs on this machine: its binary (`NATS_SERVER_BIN`,
 * `PATH`, the usual install places) and free ports.
 */
import { accessSync, constants as fsConstants } from "node:fs";
import { createServer } from "node:net";
import { delimiter, join } from "node:path";

/** Thrown when no nats-server binary can be found. */
export class NatsServerNotFoundError extends Error {
  override readonly name = "NatsServerNotFoundError";
}

const FALLBACK_BINS = [
  "/usr/sbin/nats-server",
  "/usr/local/bin/nats-server",
  "/usr/bin/nats-server",
];
const INSTALL_HINT =
  "install it with `apt-get install -y nats-server` (Debian/Ubuntu) or from https://nats.io, " +
  "or point NATS_SERVER_BIN at the binary";

function executable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Locates nats-server: `bin` if given, else `NATS_SERVER_BIN`, else `nats-server` on PATH, else
 * /usr/sbin/nats-server. Throws {@link NatsServerNotFoundError} with an install hint.
 */
export function findNatsServer(bin?: string): string {
  const explicit = bin ?? process.env.NATS_SERVER_BIN;
  if (explicit) {
    if (executable(explicit)) return explicit;
    throw new NatsServerNotFoundError(
      `nats-server not found at ${explicit} (${bin ? "bin option" : "NATS_SERVER_BIN"}): ${INSTALL_HINT}`,
    );
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && executable(join(dir, "nats-server"))) return join(dir, "nats-server");
  }
  for (const candidate of FALLBACK_BINS) if (executable(candidate)) return candidate;
  throw new NatsServerNotFoundError(
    `nats-server not found on PATH or in /usr/sbin: ${INSTALL_HINT}`,
  );
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}
