import type { StateSynchronizer } from "@statesync/core";

/**
 * Saves the replica's local snapshot whenever the page is hidden (`visibilitychange` to
 * `hidden`: tab switched, window minimised, page about to unload) or left (`pagehide`), so a
 * reload restores a recent state even between `snapshotEvery` saves. Best effort: a save that
 * the browser cuts short leaves the previous snapshot. Returns a function that stops it. Does
 * nothing where there is no `document` (workers).
 */
export function saveSnapshotOnHide(
  sync: Pick<StateSynchronizer<unknown>, "saveSnapshot">,
): () => void {
  if (typeof document === "undefined") return () => undefined;
  const save = () => void sync.saveSnapshot().catch(() => undefined);
  const onVisibility = () => {
    if (document.visibilityState === "hidden") save();
  };
  document.addEventListener("visibilitychange", onVisibility);
  globalThis.addEventListener("pagehide", save);
  return () => {
    document.removeEventListener("visibilitychange", onVisibility);
    globalThis.removeEventListener("pagehide", save);
  };
}
