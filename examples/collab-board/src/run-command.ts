import type { CommandArgs } from "@statesync/browser";
import type { boardModel } from "./board-model.js";

type Commands = (typeof boardModel)["commands"];

/** Runs a board command as a conditional update; failures are shown, never thrown. */
export type RunCommand = <K extends keyof Commands & string>(
  command: K,
  args: CommandArgs<Commands[K]>,
) => void;
