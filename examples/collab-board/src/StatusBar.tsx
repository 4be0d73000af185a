import { useRevision, useSyncStatus } from "@statesync/browser/react";
import type { BoardSync } from "./open-board.js";
import { useLastSynced } from "./use-last-synced.js";

/** Connection status, revision, last-synced time and this client's id. */
export function StatusBar({ sync }: { sync: BoardSync }) {
  const status = useSyncStatus(sync);
  const revision = useRevision(sync);
  const lastSynced = useLastSynced(sync);
  return (
    <div className="status-bar">
      <span className={`status status-${status}`} data-testid="status">
        {status}
      </span>
      <span>
        revision <b data-testid="revision">{revision}</b>
      </span>
      <span data-testid="last-synced">
        {lastSynced === undefined
          ? "not synced yet"
          : `synced ${new Date(lastSynced).toLocaleTimeString()}`}
      </span>
      <span className="client">you are {sync.clientId}</span>
    </div>
  );
}
