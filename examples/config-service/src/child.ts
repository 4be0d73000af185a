import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FromChild, ToChild } from "./ipc.js";

type Message<T extends FromChild["type"]> = Extract<FromChild, { type: T }>;

interface Waiter {
  type: FromChild["type"];
  resolve: (message: FromChild) => void;
  reject: (error: Error) => void;
}

/** A forked demo process (service or admin) and its IPC conversation with the orchestrator. */
export class Child {
  readonly #process: ChildProcess;
  readonly #inbox: FromChild[] = [];
  #waiters: Waiter[] = [];
  #failure: Error | undefined;
  #stopping = false;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;

  /**
   * Forks `script` (a file beside this one) with `args`; its output goes to ours. `onFailure`
   * is called once if the process fails or exits before {@link stop}.
   */
  constructor(
    readonly name: string,
    script: string,
    args: string[],
    private readonly onFailure: (error: Error) => void,
  ) {
    this.#process = fork(fileURLToPath(new URL(script, import.meta.url)), args, {
      stdio: "inherit",
    });
    this.#process.on("message", (message: FromChild) => {
      if (message.type === "failed") return this.#fail(new Error(message.message));
      const index = this.#waiters.findIndex((waiter) => waiter.type === message.type);
      if (index < 0) return void this.#inbox.push(message);
      this.#waiters.splice(index, 1)[0]?.resolve(message);
    });
    this.#process.on("error", (error) => this.#fail(error));
    this.exited = new Promise((resolve) => {
      this.#process.on("exit", (code, signal) => {
        this.#fail(new Error(`${name} exited unexpectedly (${signal ?? `code ${code}`})`));
        resolve();
      });
    });
  }

  /** Resolves with the next message of `type`; rejects on timeout or if the child fails. */
  next<T extends FromChild["type"]>(type: T, timeoutMs: number): Promise<Message<T>> {
    const index = this.#inbox.findIndex((message) => message.type === type);
    if (index >= 0) return Promise.resolve(this.#inbox.splice(index, 1)[0] as Message<T>);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((waiter) => waiter !== entry);
        reject(new Error(`${this.name} sent no "${type}" within ${timeoutMs} ms`));
      }, timeoutMs);
      const entry: Waiter = {
        type,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message as Message<T>);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#waiters.push(entry);
    });
  }

  /** Sends a message (ignored once the process is gone). */
  send(message: ToChild): void {
    if (this.#process.connected) this.#process.send(message);
  }

  /** Asks the process to exit; kills it if it has not after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    if (this.#process.exitCode !== null || this.#process.signalCode !== null) return;
    this.send({ type: "exit" });
    const timer = setTimeout(() => this.#process.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  #fail(error: Error): void {
    if (this.#failure) return;
    this.#failure = error;
    if (!this.#stopping) this.onFailure(error);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(this.#failure);
  }
}
