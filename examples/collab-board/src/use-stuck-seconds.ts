import { useEffect, useRef, useState } from "react";

/**
 * Whole seconds since `sending` (edits on their way while the board says live) last made
 * progress (`count`, the edits not sent yet, went down), or 0. A server that stops answering
 * without closing the connection (frozen, SIGSTOP) is noticed by the connection after 20-30 s
 * (README: its PING every 10 s); meanwhile the board said "Sending 1 edit…" for that long as if
 * all were well (a fresh-eyes trial, stop 26). Updated every second while sending.
 */
export function useStuckSeconds(sending: boolean, count: number): number {
  const since = useRef<{ at: number; count: number } | undefined>(undefined);
  const [, tick] = useState(0);
  const last = since.current;
  if (!sending) since.current = undefined;
  else if (!last || count < last.count) since.current = { at: Date.now(), count };
  else if (count > last.count) since.current = { at: last.at, count };
  useEffect(() => {
    if (!sending) return;
    const timer = setInterval(() => tick((n) => n + 1), 1_000);
    return () => clearInterval(timer);
  }, [sending]);
  return since.current ? Math.floor((Date.now() - since.current.at) / 1_000) : 0;
}
