import type { StateSynchronizer } from "@statesync/core";

/**
 * Saves the replica's local snapshot whenever the page is hidden (`visibilitychange` to
 * `hidden`: tab switched, window minimised, page about to unload) or left (`pagehide`). Best
 * effort only: browsers do not let an IndexedDB write started on unload finish, so what keeps a
 * reload current is `keepSnapshotCurrent` (a save after every applied batch); this is an extra
 * for a hidden tab that stays alive. Returns a function that stops it. Does
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
