/**
 * Reading a file an operator names on the command line (`import FILE`, `--creds`). Unlike the
 * files statesync finds in a directory it manages (read only when regular: node's
 * `readRegularFile`), a named file may be a pipe on purpose: `import <(ssh host cat b.json)`,
 * `import /dev/stdin`, `--creds <(vault read …)`. So anything readable is read, as `cat` would,
 * but never past `maxBytes`: a device without end (`/dev/zero`) is refused once the limit is
 * passed, instead of being read until memory runs out.
 */
import { createReadStream } from "node:fs";
import { StateSyncError } from "@statesync/node";

/**
 * The bytes of `path`, at most `maxBytes`. Throws `VALIDATION` naming `what` (e.g. `--creds
 * c.creds`) when it cannot be read (missing, a directory, no permission), and `tooLarge()` (by
 * default `VALIDATION`) when it holds more.
 */
export async function readOperatorFile(
  path: string,
  maxBytes: number,
  what: string,
  tooLarge: () => StateSyncError = () =>
    new StateSyncError("VALIDATION", `${what} holds more than ${maxBytes} bytes`, {
      details: { maxBytes },
    }),
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = createReadStream(path, { highWaterMark: 1024 * 1024 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (cause) {
    if (cause instanceof StateSyncError) throw cause;
    throw new StateSyncError("VALIDATION", `cannot read ${what}: ${(cause as Error).message}`, {
      cause,
    });
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks);
}
