import { isTcpServerUrl } from "@statesync/node";
import { describe, expect, it } from "vitest";

/**
 * `servers`' host check (`isTcpServerUrl`) refuses what no host can be (`n1,n2`), and takes every
 * host nats.js dials. nats.js reads a server's host and port as an `http://` URL's
 * (`hostPort` in nats-core's servers.js), so an internationalized domain name is dialled as its
 * punycode; `nats:` is no special scheme to URL, which percent-encodes such a host instead
 * (`b%C3%BCcher.example`): the check refused a server that worked before it.
 */
describe("isTcpServerUrl: the hosts nats.js dials", () => {
  it.each([
    "nats://bücher.example:4222",
    "tls://bücher.example:4222",
    "bücher.example:4222",
    "nats://user:pass@bücher.example:4222",
    "nats://xn--bcher-kva.example:4222",
    "nats://NATS.Example.COM:4222",
    "nats://host_with_underscore:4222",
    "nats://user:p%40ss@host:4222",
    "localhost",
    "localhost:4222",
    "nats://[::1]:4222",
    "tls://[2001:db8::1]",
    "[::1]:4222",
  ])("takes %s", (server) => {
    expect(isTcpServerUrl(server)).toBe(true);
  });

  it.each([
    "nats://n1,n2:4222",
    "n1,n2",
    "nats://n1;n2:4222",
    "nats://n1!:4222",
    "nats://bü cher.example:4222",
    "nats://a%zz:4222",
    "nats://",
    "nats://:4222",
  ])("refuses %s", (server) => {
    expect(isTcpServerUrl(server)).toBe(false);
  });
});
