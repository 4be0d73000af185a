/**
 * The writer's unconditional appends (`StateSynchronizer.updateUnconditionally`): a command
 * appended at the tail without a check, alone or with the others in flight (`CommandGroups`),
 * resolving once applied here (the writer's invariant 7). The conditional batches wait for the
 * commands in {@link UnconditionalWriter.inFlight} before they append (invariant 8), and the
 * commands called after a batch lost a race wait until it is decided (invariant 6).
 */
import { commandFailed } from "../errors.js";
import type { EntryOrigin } from "../entry.js";
import type { CommandMap } from "../model.js";
import { nextSeed } from "../prng.js";
import type { UnconditionalResult } from "../synchronizer-types.js";
import {
  CommandGroups,
  commandSendParts,
  sendCommands,
  type CommandSendParts,
  type CommandSent,
  type QueuedCommand,
} from "./command-groups.js";
import type { ParsedUpdateOptions } from "./options.js";
import {
  ENDED,
  limitsFromNow,
  unsent,
  waitEnded,
  waitLimits,
  within,
  type UpdateLimits,
} from "./wait-limits.js";
import type { WriterParts } from "./writer.js";

/** Unconditional appends; see the module comment. */
export class UnconditionalWriter<S, C extends CommandMap<S>> {
  /** The appends of the commands submitted (sent, or waiting in a group), until applied here. */
  readonly inFlight = new Set<Promise<unknown>>();
  private readonly sendParts: CommandSendParts;
  private readonly groups: CommandGroups;

  /** `retrying`: while a conditional batch that lost a race tries again, when it is decided. */
  constructor(
    private readonly p: WriterParts<S, C>,
    private readonly retrying: () => Promise<void> | undefined,
  ) {
    this.sendParts = commandSendParts(p);
    this.groups = new CommandGroups(this.sendParts, p.groupCommands ? undefined : Infinity);
  }

  /** Sends the commands waiting in a group now (at close). */
  flush(): Promise<void> {
    return this.groups.flush();
  }

  /** Resolves once every append submitted has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Appends a command at the tail (see `StateSynchronizer.updateUnconditionally`). `context`: the
   * entry's `ts` and `seed` (a pending command's, fixed when it was queued); drawn now without.
   */
  async unconditional(
    name: string,
    args: unknown,
    options: ParsedUpdateOptions,
    origin?: EntryOrigin,
    context?: { readonly timestamp: number; readonly seed: number },
  ): Promise<UnconditionalResult> {
    const update = limitsFromNow(options);
    let error = unsent(this.p.status, update);
    if (error) throw error;
    const decided = this.retrying();
    if (decided) {
      // Behind this replica's conditional batch that lost a race (the writer's invariant 6).
      const limits = waitLimits([update], this.p.status.signal);
      await within(decided, limits).finally(() => limits.dispose());
      error = unsent(this.p.status, update);
      if (error) throw error;
    }
    if (!this.p.opener.standsOnLog || this.p.replica.legacy || this.p.contention.mayWait) {
      await this.beforeUnconditional(update);
      error = unsent(this.p.status, update);
      if (error) throw error;
    }
    const call: QueuedCommand = {
      ...{ name, args, seed: context?.seed ?? nextSeed() },
      ...{ ts: context?.timestamp ?? Date.now(), limits: update },
    };
    const release = this.p.replica.watchFailures(); // before its entry can be read back
    try {
      return await this.sendCommand(call, origin, options);
    } finally {
      release();
    }
  }

  /** Sends a command (alone or with others); what this replica did with it. */
  private async sendCommand(
    call: QueuedCommand,
    origin: EntryOrigin | undefined,
    options: ParsedUpdateOptions,
  ): Promise<UnconditionalResult> {
    // Commands in flight together share appends, but for a signal's or an origin's.
    const append =
      origin === undefined && options.signal === undefined
        ? this.groups.submit(call)
        : sendCommands(this.sendParts, [call], origin).then((revision) => ({ revision, index: 0 }));
    this.inFlight.add(append);
    let sent: CommandSent;
    try {
      sent = await append;
    } catch (e) {
      this.p.status.fatal(e);
      throw e;
    } finally {
      this.inFlight.delete(append);
    }
    const { revision, index } = sent; // and applied here, unless its limits ended first
    const replica = this.p.replica;
    if (replica.revision < revision || replica.passedOver(revision)) {
      return { revision, applied: false };
    }
    const failure = replica.commandFailure(revision, index);
    if (failure) throw commandFailed(failure, revision);
    return { revision };
  }

  /** An unconditional command's waits before it is sent (see `beforeSending`). */
  private async beforeUnconditional(update: UpdateLimits): Promise<void> {
    const limits = waitLimits([update], this.p.status.signal);
    try {
      if (!this.p.opener.standsOnLog) await this.p.opener.anchor(limits.deadline, limits.signal);
      const upgraded = !this.p.replica.legacy || (await within(this.p.upgrader.ensure(), limits));
      if (upgraded === ENDED) return;
      if (this.p.contention.mayWait) await this.p.contention.deferToIntents({ heldMs: 0 }, limits);
    } catch (e) {
      if (!waitEnded(e, limits)) throw e; // else the caller says what ended the wait
    } finally {
      limits.dispose();
    }
  }
}
