// A program whose user may read the stream's info but not create consumers: its open is refused
// (PERMISSION_DENIED, printed on stdout) and it must then exit by itself.
import process from "node:process";
import { z } from "zod/v4";
import { defineModel, openSynchronizer } from "@statesync/node";

const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const [url, stream, user, pass, inboxPrefix] = process.argv.slice(2);
try {
  await openSynchronizer({
    servers: url,
    stream,
    model,
    snapshots: false,
    connectOptions: { user, pass, inboxPrefix },
  });
  process.stdout.write("opened");
} catch (e) {
  process.stdout.write(String(e.code));
}
