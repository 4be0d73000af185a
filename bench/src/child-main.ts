/**
 * Entry of a client child process (started by `lib/child.ts`, pinned to the client core in the
 * pinned placement). Runs the one task the bench process names, reports its result or error,
 * and exits (which writes the CPU profile under `--cpu-prof`).
 */
import { parentChannel } from "./lib/channel.js";
import { describeError } from "./lib/harness.js";
import { TASKS } from "./tasks.js";

const channel = parentChannel();

const finish = (message: { type: string } & Record<string, unknown>, code: number) => {
  if (!process.connected) process.exit(code);
  process.send!(message, () => process.exit(code));
};

channel.first().then(async (m) => {
  try {
    const name = String(m.task);
    const task = TASKS[name];
    if (m.type !== "task" || !task) throw new Error(`unknown task ${name}`);
    const value = await task(m.params as never, channel);
    finish({ type: "result", value }, 0);
  } catch (err) {
    finish({ type: "error", message: describeError(err, true) }, 1);
  }
});
// The bench process died: do not linger.
process.on("disconnect", () => process.exit(3));
