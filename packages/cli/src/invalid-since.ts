/**
 * Where a state that fails the model's schema came from (`statesync verify`, docs/cli.md): the
 * revision of the entry after which the state has failed ever since. Steps back 1, 2, 4, ...
 * revisions from `latest` until a state passes (or the first retained revision is reached),
 * then bisects between the two: a few `stateAt` replays, not one per revision. Within the window
 * it bisects, a state that passed again in between is not looked for (the entry found made the
 * state invalid; a later one may have repaired and broken it again). Returns `first` when the
 * state there fails already (the starting point carries it), undefined when a `stateAt` fails
 * (the log changed meanwhile, a state that does not migrate): nothing is claimed then.
 */
export async function invalidSince(
  stateAt: (revision: number) => Promise<unknown>,
  valid: (state: unknown) => boolean,
  first: number,
  latest: number,
): Promise<number | undefined> {
  const passes = async (revision: number) => valid(await stateAt(revision));
  try {
    let hi = latest; // fails
    let lo: number | undefined; // passes
    for (let step = 1; lo === undefined; step *= 2) {
      if (hi <= first) return first;
      const r = Math.max(first, hi - step);
      if (await passes(r)) lo = r;
      else hi = r;
    }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await passes(mid)) lo = mid;
      else hi = mid;
    }
    return hi;
  } catch {
    return undefined;
  }
}
