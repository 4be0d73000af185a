// Holds the offline queue of (key, owner) in a FilePendingStore until it is killed.
// argv: dir key owner
import process from "node:process";
import { setInterval } from "node:timers";
import { FilePendingStore } from "@statesync/node";

const [dir, key, owner] = process.argv.slice(2);
await new FilePendingStore(dir).open(key, owner);
process.send?.("held");
setInterval(() => undefined, 1_000_000);
