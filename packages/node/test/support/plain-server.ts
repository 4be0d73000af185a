import net from "node:net";

/** A fake NATS server on plain TCP that never offers TLS (see {@link startPlainServer}). */
export interface PlainServer {
  /** `tls://127.0.0.1:<port>`: what a client that must not talk in clear text is pointed at. */
  readonly tlsUrl: string;
  /** Everything clients sent, concatenated (CONNECT carries user and password). */
  received(): string;
  /** How many connections were accepted. */
  connections(): number;
  stop(): Promise<void>;
}

/**
 * Listens on a free port of 127.0.0.1 and greets each client with a NATS `INFO` that has neither
 * `tls_required` nor `tls_available` (a server without TLS, or an impostor downgrading the
 * connection), answers `PING` with `PONG`, and records what clients send.
 */
export async function startPlainServer(): Promise<PlainServer> {
  let text = "";
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    socket.write(
      'INFO {"server_id":"FAKE","version":"2.10.0","proto":1,"max_payload":1048576,"headers":true,"jetstream":true}\r\n',
    );
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if (d.includes("PING")) socket.write("PONG\r\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    tlsUrl: `tls://127.0.0.1:${port}`,
    received: () => text,
    connections: () => accepted,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
