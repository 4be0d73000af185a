import { StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { afterCommit, afterLive, noticeForFailure, tick } from "../src/notices.js";

describe("board notices", () => {
  it("names the whole wait of an edit that never reached the server, and goes when live", () => {
    const error = new StateSyncError("UNAVAILABLE", "nothing was appended: ...", {
      details: { waitedMs: 37_412, attempts: 9, notSent: true },
    });
    const notice = noticeForFailure("addCard", error);
    expect(notice.text).toBe(
      "Could not add the card: the server could not be reached for 37 s, so it was not saved.",
    );
    expect(afterLive([notice])).toEqual([]);
  });

  it("says why an edit was refused, and keeps it until a later edit commits", () => {
    const refused = noticeForFailure("moveCard", new Error("the list no longer exists"));
    expect(refused.text).toBe("Could not move the card: the list no longer exists.");
    expect(afterLive([refused])).toEqual([refused]);
    // An edit that started before the refusal was shown does not clear it; a later one does.
    const before = refused.id - 1;
    expect(afterCommit([refused], before)).toEqual([refused]);
    expect(afterCommit([refused], tick())).toEqual([]);
  });

  it("a lost answer is not called a failure", () => {
    const error = new StateSyncError("UNKNOWN_OUTCOME", "the append may or may not be stored");
    const notice = noticeForFailure("renameCard", error);
    expect(notice.text).toMatch(/^Could not confirm that the server stored your edit/);
    expect(notice.clears).toBe("live");
  });
});
