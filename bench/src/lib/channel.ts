import type { Message } from "./child.js";

/** The child's side of the message channel with the bench process (see `Child`). */
export interface Channel {
  send(message: Message): void;
  /** The next message from the bench process. */
  next(): Promise<Message>;
}

/** A task run in a client child process: gets its params (JSON) and the channel. */
export type Task = (params: never, channel: Channel) => Promise<unknown>;

/** The channel over this process's IPC (a child started by `Child.start`). */
export function parentChannel(): Channel & { first(): Promise<Message> } {
  const inbox: Message[] = [];
  let waiter: ((m: Message) => void) | undefined;
  process.on("message", (m: Message) => {
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w(m);
    } else inbox.push(m);
  });
  const next = () =>
    inbox.length > 0
      ? Promise.resolve(inbox.shift()!)
      : new Promise<Message>((resolve) => (waiter = resolve));
  return {
    // Nothing once the bench process went away (EPIPE, ERR_IPC_CHANNEL_CLOSED otherwise).
    send: (message) => {
      if (process.connected) process.send?.(message, undefined, {}, () => undefined);
    },
    next,
    first: next,
  };
}
