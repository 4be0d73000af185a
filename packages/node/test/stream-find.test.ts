import { natsV2Adapter, natsV3Adapter, type NatsV2ConnectionLike } from "@statesync/core";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "./helpers.js";
import { CLIENT_LINES, type Closable } from "./support/client-lines.js";

const ctx = useNatsServer();

/**
 * The stream-create race's check (stream-config.ts, `streamExists`): after a create answered
 * "subjects overlap" and the info "stream not found" (a cluster node that does not know the
 * stream another one just created), the list of streams by subject tells whose subjects they
 * are. Both client lines' adapters must pass nats.js's `find` on, or the check says nothing.
 */
describe.each(CLIENT_LINES)("streams.find on the $name line", (line) => {
  it("names the stream holding a subject, and throws when none does", async () => {
    const nc: Closable = await line.tcp(ctx.server.url);
    try {
      const name = uniqueStream("FIND");
      const admin = await line.admin(nc);
      await admin.streams.add({ name, subjects: [`find.${name}.>`] });
      const adapter =
        line.name === "v2"
          ? natsV2Adapter(nc as unknown as NatsV2ConnectionLike)
          : natsV3Adapter(nc as never, { jetstream, jetstreamManager });
      const api = await adapter.open(5_000);
      expect(api.streams.find).toBeTypeOf("function");
      expect(await api.streams.find!(`find.${name}.>`)).toBe(name);
      await expect(api.streams.find!(`nothing.${name}.>`)).rejects.toThrow();
    } finally {
      await nc.close();
    }
  });
});
