// requestJson's transport in the CLI: node:http(s), which a one-shot command loads in a fraction
// of the time fetch's HTTP stack takes (about 140 ms of a `baton who` here). Failures reject the
// way fetch's do, so the client's messages stay the same.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { PlainRequest } from "../../client/http.ts";

export const nodeRequest: PlainRequest = (url, init) =>
  new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err.name === "AbortError" ? err : new TypeError("fetch failed", { cause: err }));
    const target = new URL(url);
    const headers = init.body === undefined ? init.headers : { ...init.headers, "content-length": String(Buffer.byteLength(init.body)) };
    const req = (target.protocol === "https:" ? httpsRequest : httpRequest)(target, { method: init.method, headers, signal: init.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", failed);
    });
    req.on("error", failed);
    req.end(init.body);
  });
