import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

/**
 * A CA (`ca.pem`, `ca-key.pem`), another CA (`other-ca.pem`) and a server and a client
 * certificate the first one signed for 127.0.0.1 (`server.pem`, `server-key.pem`, `client.pem`,
 * `client-key.pem`), written into `dir` with the system's `openssl`; valid for two days.
 */
export function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) =>
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  for (const ca of ["ca", "other-ca"]) {
    const subject = ["-subj", `/CN=statesync test ${ca}`];
    openssl(
      "req",
      "-x509",
      ...ec,
      "-keyout",
      `${ca}-key.pem`,
      "-out",
      `${ca}.pem`,
      "-days",
      "2",
      ...subject,
    );
  }
  for (const name of ["server", "client"]) {
    openssl(
      "req",
      ...ec,
      "-keyout",
      `${name}-key.pem`,
      "-out",
      `${name}.csr`,
      "-subj",
      `/CN=${name}`,
    );
    writeFileSync(
      path.join(dir, `${name}.ext`),
      "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
    );
    openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca-key.pem",
      "-CAcreateserial",
      "-out",
      `${name}.pem`,
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
    );
  }
}

/**
 * The `tls {}` block of a nats-server that requires TLS and a client certificate signed by the
 * CA of {@link makeCertificates} in `dir`.
 */
export function tlsServerConfig(dir: string): string {
  const file = (name: string) => path.join(dir, name);
  return `tls { cert_file: "${file("server.pem")}", key_file: "${file("server-key.pem")}", ca_file: "${file("ca.pem")}", verify: true }`;
}
