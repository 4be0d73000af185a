import type { ConsumerLike, ConsumerMessagesLike } from "./nats-types.js";

/**
 * The deletions of a follower's server consumers (`JetStreamFollower`), which its `stop()` waits
 * for so that the owner closes the connection only after them: left to the consumer's
 * `inactive_threshold`, each closed replica's consumer stayed 5 minutes (a fresh-eyes trial: a
 * service that restarts often piled them up).
 */
export class ConsumerDisposals {
  private readonly pending = new Set<Promise<void>>();

  /**
   * Stops `messages` and deletes `consumer` once its pull has ended: deleted under an active
   * pull, the server says so to the pull and nats.js starts re-creating the ordered consumer, on
   * a timer that retries forever once the connection is closed (it kept processes from exiting).
   * Never rejects: a consumer that is not deleted expires on the server.
   */
  dispose(consumer: ConsumerLike, messages: ConsumerMessagesLike): void {
    messages.stop();
    const done: Promise<void> = messages
      .closed()
      .then(() => consumer.delete())
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /** Resolves once every deletion under way has ended, or after `ms` (a server not answering). */
  async settled(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise((r) => (timer = setTimeout(r, ms)));
    await Promise.race([Promise.all([...this.pending]), late]);
    clearTimeout(timer);
  }
}
