import { ENDED, within, type WaitLimits } from "./wait-limits.js";

/** The writers of one log in this process, taking turns (see {@link LocalTurns}). */
interface Group {
  held: boolean;
  /** Writers waiting for the turn, first come first served. */
  readonly queue: Array<() => void>;
  /** The highest revision a member committed: the next member catches up to it first. */
  latest: number;
}

/** The groups of this process, by log identity (`LogInfo.identity`). */
const groups = new Map<string, Group>();

/** One writer's turn: `latest` to catch up to before its attempt; `done` passes the turn on. */
export interface LocalTurn {
  readonly latest: number;
  /** Ends the turn; `committed`: the revision its append stored, if it stored one. */
  done(committed?: number): void;
}

const NO_TURN: LocalTurn = { latest: 0, done: () => undefined };

/**
 * Conditional appends of the replicas of one log that share a process take turns (issue 8):
 * one attempt at a time, first come first served, each after catching up to what the one
 * before committed. Such replicas cannot see each other's attempts in the log, only their
 * commits, so without turns all of them ran their recipes on the same revision and all but one
 * conflicted: 8 writers of one process got 0.47x the commits of one writer (each commit cost
 * the server 8 appends). Writers in other processes still race as before (`contention.ts`);
 * the turn only orders this process's own. A wait for the turn ends at the update's limits,
 * and a turn ends at its writer's answer or after {@link TURN_LEASE_MS}, whichever comes first.
 *
 * Keyed by the log's identity (`LogInfo.identity`: the stream, its subject and its creation),
 * so replicas on separate connections to one stream share a group, and two servers' streams of
 * one name do not. Before the identity is known, no turn is taken.
 */
export class LocalTurns {
  constructor(private readonly identity: () => string | undefined) {}

  /** Waits for this replica's turn; ENDED when `limits` ended the wait first. */
  async take(limits: WaitLimits): Promise<LocalTurn | typeof ENDED> {
    const key = this.identity();
    if (key === undefined) return NO_TURN;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = { held: false, queue: [], latest: 0 }));
    const g = group;
    if (!g.held) {
      g.held = true;
      return turnOf(key, g);
    }
    let granted = false;
    const grant = () => void (granted = true);
    const wait = new Promise<void>((resolve) => g.queue.push(() => (grant(), resolve())));
    const waiter = g.queue[g.queue.length - 1]!;
    if ((await within(wait, limits)) !== ENDED) return turnOf(key, g);
    if (granted)
      pass(key, g); // granted as the limits ended: the next one goes
    else g.queue.splice(g.queue.indexOf(waiter), 1);
    return ENDED;
  }

  /**
   * Takes the turn and catches up to what the writer before committed (`catchUp`; a failed or
   * slow catch-up only risks a conflict). ENDED, holding nothing, when `limits` ended a wait.
   */
  async hold(
    limits: WaitLimits,
    catchUp: (revision: number) => Promise<unknown>,
  ): Promise<LocalTurn | typeof ENDED> {
    const turn = await this.take(limits);
    if (turn === ENDED || turn.latest === 0) return turn;
    if (
      (await within(
        catchUp(turn.latest).catch(() => undefined),
        limits,
      )) !== ENDED
    )
      return turn;
    turn.done();
    return ENDED;
  }

  /** `work()` in a held turn ({@link hold}); `committed(result)`: the revision it stored. */
  async run<T>(
    limits: WaitLimits,
    catchUp: (revision: number) => Promise<unknown>,
    work: () => Promise<T>,
    committed: (result: T) => number | undefined,
  ): Promise<T | typeof ENDED> {
    const turn = await this.hold(limits, catchUp);
    if (turn === ENDED) return ENDED;
    let result: T | undefined;
    try {
      return (result = await work());
    } finally {
      turn.done(result === undefined ? undefined : committed(result));
    }
  }
}

/**
 * Longest a turn holds the others back, ms: then the next writer goes even though this one's
 * append is not answered yet (one whose acknowledgement was lost re-sends until its limits end;
 * the others must not wait for that, nor for anything that waits on them). Each append is
 * conditional, so a turn passed early costs at most a conflict.
 */
export const TURN_LEASE_MS = 1_000;

function turnOf(key: string, g: Group): LocalTurn {
  let passed = false;
  const passOn = () => {
    if (passed) return;
    passed = true;
    clearTimeout(lease);
    pass(key, g);
  };
  const lease = setTimeout(passOn, TURN_LEASE_MS);
  return {
    latest: g.latest,
    done(committed) {
      if (committed !== undefined && committed > g.latest) g.latest = committed;
      passOn();
    },
  };
}

/** Gives the turn to the next waiting writer, or frees the group. */
function pass(key: string, g: Group): void {
  const next = g.queue.shift();
  if (next) return next();
  g.held = false;
  groups.delete(key);
}
