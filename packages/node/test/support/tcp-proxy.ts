import net from "node:net";

/**
 * A small TCP proxy between a NATS client and nats-server, for fault tests. It can cut every
 * connection now (`cutAll`), refuse new ones (`setRefusing`), cut and refuse on a schedule
 * (`startFlapping`), or cut a connection right after the client sent a publish on a subject,
 * before any reply reaches the client (`cutAfterPublish`, optionally refusing reconnects for a
 * while): the server stores the message but its acknowledgement is lost; or keep such a
 * connection open and let nothing the server sends reach its client any more
 * (`holdAfterPublish`: a request, a pull, stays in flight as long as the test needs). Started with
 * `{ parse: true }` it reads the server's side as NATS protocol frames and can drop messages
 * on their way to the client (`dropDelivered`), as a core subscription may lose them. Or freeze
 * like a SIGSTOPped server once it has sent a number of bytes (`stallAfter`): nothing is
 * forwarded either way for a while, then all that was held is.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private refusing = false;
  private armed: ((subject: string) => boolean) | undefined;
  /** What the armed publish does: cut its connection (after 100 ms), or hold it. */
  private armedFor: "cut" | "hold" = "cut";
  private refuseAfterCutMs = 0;
  private onCut: (() => void) | undefined;
  private flapTimer: ReturnType<typeof setTimeout> | undefined;
  /** Number of connections cut after a publish. */
  cuts = 0;
  /** Messages dropped by {@link dropDelivered}'s filter. */
  dropped = 0;
  private dropper: ((subject: string, frame: string) => boolean) | undefined;
  /** Bytes forwarded from the server to clients. */
  delivered = 0;
  private stallAt: { bytes: number; ms: number; started: () => void } | undefined;
  /** Held while stalled: the writes to make once it ends. */
  private held: Array<() => void> | undefined;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
    private readonly parse: boolean,
  ) {
    this.server = server;
  }

  /**
   * Starts a proxy on a free loopback port in front of `target`; `parse` reads what the server
   * sends as protocol frames (needed by {@link dropDelivered}).
   */
  static async start(
    target: { host: string; port: number },
    options: { parse?: boolean } = {},
  ): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const proxy = new TcpProxy(target, port, server, options.parse ?? false);
    server.on("connection", (socket) => proxy.accept(socket));
    return proxy;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.target.port, this.target.host);
    const pair = { client, upstream };
    this.pairs.add(pair);
    let blocked = false;
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
    const frames = this.parse ? this.frameFilter() : undefined;
    upstream.on("data", (chunk: Buffer) => {
      if (blocked) return;
      const out = frames ? frames(chunk) : chunk;
      if (this.held) return void this.held.push(() => client.write(out));
      if (out.length > 0) client.write(out);
      this.delivered += out.length;
      this.stallIfDue();
    });
    let spoke = false;
    client.on("data", (chunk: Buffer) => {
      const cutHandshake = spoke ? undefined : this.handshakeCuts;
      spoke = true;
      if (cutHandshake) {
        this.handshakeCuts = undefined;
        close();
        return void cutHandshake();
      }
      if (this.held) return void this.held.push(() => upstream.write(chunk));
      const match = this.armed;
      const subjects = [...chunk.toString("latin1").matchAll(/(?:^|\r\n)H?PUB (\S+) /g)].map(
        (m) => m[1]!,
      );
      if (match !== undefined && subjects.some(match)) {
        this.armed = undefined;
        blocked = true; // nothing the server answers reaches the client any more
        upstream.write(chunk);
        if (this.armedFor === "hold") {
          this.onCut?.();
          return;
        }
        setTimeout(() => {
          this.cuts += 1;
          if (this.refuseAfterCutMs > 0) {
            this.refusing = true;
            setTimeout(() => (this.refusing = false), this.refuseAfterCutMs);
          }
          close();
          this.onCut?.();
        }, 100);
        return;
      }
      upstream.write(chunk);
    });
  }

  /**
   * Cuts the next connection that publishes on a subject `match` accepts (a string is a prefix),
   * after the publish is forwarded to the server. Resolves once cut.
   */
  cutAfterPublish(
    match: string | ((subject: string) => boolean),
    options: { refuseForMs?: number } = {},
  ): Promise<void> {
    this.refuseAfterCutMs = options.refuseForMs ?? 0;
    this.armedFor = "cut";
    this.armed = typeof match === "string" ? (s) => s.startsWith(match) : match;
    return new Promise((resolve) => {
      this.onCut = resolve;
    });
  }

  /**
   * Holds the next connection that publishes on a subject `match` accepts (a string is a
   * prefix): the publish is forwarded, then nothing the server sends reaches that client any
   * more, and the connection stays open. Resolves once held.
   */
  holdAfterPublish(match: string | ((subject: string) => boolean)): Promise<void> {
    this.armedFor = "hold";
    this.armed = typeof match === "string" ? (s) => s.startsWith(match) : match;
    return new Promise((resolve) => {
      this.onCut = resolve;
    });
  }

  /**
   * Drops each message (`MSG`/`HMSG`) the server sends for which `drop(subject, frame)` is true,
   * `frame` being the whole frame as latin1 (headers included); undefined stops dropping. Needs
   * a proxy started with `parse`.
   */
  dropDelivered(drop: ((subject: string, frame: string) => boolean) | undefined): void {
    if (!this.parse) throw new Error("dropDelivered needs TcpProxy.start(target, { parse: true })");
    this.dropper = drop;
  }

  /** Splits the server's bytes into protocol frames and drops what the dropper asks for. */
  private frameFilter(): (chunk: Buffer) => Buffer {
    let pending: Buffer = Buffer.alloc(0);
    return (chunk) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      let i = 0;
      for (;;) {
        const eol = pending.indexOf("\r\n", i);
        if (eol < 0) break;
        const line = pending.toString("latin1", i, eol);
        let end = eol + 2;
        const tokens = line.split(" ");
        const isMsg = tokens[0] === "MSG" || tokens[0] === "HMSG";
        if (isMsg) end += Number(tokens[tokens.length - 1]) + 2;
        if (end > pending.length) break;
        const frame = pending.subarray(i, end);
        if (isMsg && this.dropper?.(tokens[1]!, frame.toString("latin1"))) this.dropped += 1;
        else out.push(frame);
        i = end;
      }
      pending = pending.subarray(i);
      return out.length === 1 ? out[0]! : Buffer.concat(out);
    };
  }

  /**
   * Once the server has sent `bytes` more to clients, holds everything either way for `ms` (as a
   * SIGSTOPped server would), then forwards what it held. Resolves when the stall starts.
   */
  stallAfter(bytes: number, ms: number): Promise<void> {
    return new Promise((started) => {
      this.stallAt = { bytes: this.delivered + bytes, ms, started };
    });
  }

  private stallIfDue(): void {
    const at = this.stallAt;
    if (at === undefined || this.delivered < at.bytes) return;
    this.stallAt = undefined;
    this.held = [];
    at.started();
    setTimeout(() => {
      const held = this.held ?? [];
      this.held = undefined;
      for (const write of held) write();
    }, at.ms);
  }

  /**
   * The next connection whose client starts to speak is cut as soon as it does (its CONNECT,
   * after the server's INFO reached it), before that reaches the server: a handshake cut midway
   * (a connection that only reads the INFO is left alone). Resolves once cut.
   */
  cutNextHandshake(): Promise<void> {
    return new Promise((resolve) => {
      this.handshakeCuts = resolve;
    });
  }

  private handshakeCuts: (() => void) | undefined;

  /** Cuts every open connection now. */
  cutAll(): void {
    for (const { client, upstream } of [...this.pairs]) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** While refusing, new connections are closed at once. */
  setRefusing(refusing: boolean): void {
    this.refusing = refusing;
  }

  /**
   * Cuts every connection every `everyMs` and refuses new ones for `downMs` after each cut, until
   * {@link stopFlapping}. Counts cuts in `flaps`.
   */
  startFlapping(everyMs: number, downMs: number): void {
    this.stopFlapping();
    const tick = () => {
      this.flaps += 1;
      this.cutAll();
      this.refusing = true;
      this.flapTimer = setTimeout(() => {
        this.refusing = false;
        this.flapTimer = setTimeout(tick, everyMs);
      }, downMs);
    };
    this.flapTimer = setTimeout(tick, everyMs);
  }

  /** Stops {@link startFlapping}; connections are accepted again. */
  stopFlapping(): void {
    if (this.flapTimer) clearTimeout(this.flapTimer);
    this.flapTimer = undefined;
    this.refusing = false;
  }

  /** Number of cuts by {@link startFlapping}. */
  flaps = 0;

  async stop(): Promise<void> {
    this.stopFlapping();
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
