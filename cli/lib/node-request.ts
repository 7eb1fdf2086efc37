// requestJson's transport in the CLI: node:http(s), which a one-shot command loads in a fraction
// of the time fetch's HTTP stack takes (about 140 ms of a `baton who` here). Failures reject the
// way fetch's do ("fetch failed" with the cause), so the client's messages stay the same; like
// fetch, a connection (TLS included) must be up within a bound (10 s unless
// BATON_CONNECT_TIMEOUT_SECONDS says otherwise, see config.ts). Redirects are not followed: the
// answer says where they point.
import { request as httpRequest, type ClientRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { PlainRequest } from "../../client/http.ts";

export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;

/** requestJson's transport whose connection must be up within `connectTimeoutMs`. */
export const nodeRequestWithin = (connectTimeoutMs: number): PlainRequest => (url, init) =>
  new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err.name === "AbortError" ? err : new TypeError("fetch failed", { cause: err }));
    const target = new URL(url);
    const tls = target.protocol === "https:";
    const headers = init.body === undefined ? init.headers : { ...init.headers, "content-length": String(Buffer.byteLength(init.body)) };
    // A fresh connection per request (agent: false): nothing keeps a finished command alive, and every request connects.
    const req: ClientRequest = (tls ? httpsRequest : httpRequest)(target, { method: init.method, headers, signal: init.signal, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), location: res.headers.location }));
      res.on("error", failed);
    });
    req.on("socket", (socket: Socket) => {
      const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no connection within ${connectTimeoutMs / 1000} s`), { code: "CONNECT_TIMEOUT" })), connectTimeoutMs);
      socket.once(tls ? "secureConnect" : "connect", () => clearTimeout(timer));
      socket.once("close", () => clearTimeout(timer));
    });
    req.on("error", failed);
    req.end(init.body);
  });

/** With the default connect timeout. */
export const nodeRequest = nodeRequestWithin(DEFAULT_CONNECT_TIMEOUT_SECONDS * 1000);
