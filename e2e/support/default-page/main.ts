// A page that opens a replica with @statesync/browser's DEFAULT options (no snapshotEvery, no
// saveOnHide tweaks): what a new user gets. Bundled by default-page.ts and served at
// `/default-page.html?server=<ws url>&stream=<name>` (issue 10, case 9).
import { defineModel, exposeSynchronizer, openSynchronizer } from "@statesync/browser";
import { z } from "zod";

export const tally = defineModel({
  name: "tally",
  state: z.object({ n: z.number().int(), seen: z.array(z.number().int()) }),
  initial: { n: 0, seen: [] },
  commands: {
    add: {
      args: z.object({ by: z.number().int() }),
      apply(draft, { by }) {
        draft.n += by;
        draft.seen.push(by);
      },
    },
  },
});

const params = new URLSearchParams(location.search);
const sync = await openSynchronizer({
  servers: params.get("server")!,
  stream: params.get("stream")!,
  model: tally,
});
exposeSynchronizer(sync);
document.body.dataset.opened = "true";
