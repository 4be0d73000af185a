import { useEffect, useState } from "react";
import type { BoardSync } from "./open-board.js";

/**
 * When the replica was last known to be in step with the server (ms since the epoch): the last
 * time it became `live` or applied entries while `live`; undefined before the first time.
 */
export function useLastSynced(sync: BoardSync): number | undefined {
  const [at, setAt] = useState<number | undefined>(sync.status === "live" ? Date.now() : undefined);
  useEffect(() => {
    const mark = () => {
      if (sync.status === "live") setAt(Date.now());
    };
    const stopState = sync.subscribe(mark);
    const stopStatus = sync.on("status", mark);
    mark();
    return () => {
      stopState();
      stopStatus();
    };
  }, [sync]);
  return at;
}
