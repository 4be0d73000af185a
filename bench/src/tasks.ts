import { traceProfileTask } from "./apply-trace.js";
import { kvTask, writersTask } from "./contention-run.js";
import { fanoutRawTask } from "./fanout-raw-run.js";
import { fanoutFollowersTask } from "./fanout-run.js";
import { largeStateProfileTask } from "./large-state.js";
import type { Task } from "./lib/channel.js";
import { singleWriterTask } from "./single-writer.js";
import { unconditionalTask } from "./unconditional.js";

/** The tasks a client child process can run, by name (see `lib/child.ts`). */
export const TASKS: Record<string, Task> = {
  "single-writer": singleWriterTask as Task,
  unconditional: unconditionalTask as Task,
  "contention-writers": writersTask as Task,
  "contention-kv": kvTask as Task,
  "apply-trace-profile": traceProfileTask as Task,
  "large-state-profile": largeStateProfileTask as Task,
  "fanout-followers": fanoutFollowersTask as Task,
  "fanout-raw": fanoutRawTask as Task,
};
