// A receiver of what the coordinator POSTs out (webhook events, A2A pushes) for the e2e tests: a
// node:http server on a free loopback port that keeps every request and answers the queued
// statuses in turn, then 200. wrangler dev's .dev.vars allows private addresses, so it is reachable.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Delivery {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  got: Delivery[];
  server: Server;
  /** Resolves with every delivery once `done` holds of them; rejects with what came after `timeoutMs`. */
  waitFor(done: (got: Delivery[]) => boolean, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

/** Listens at `path` (only for the URL: every path is answered alike); `statuses` are answered first, in turn. */
export async function startReceiver(path: string, statuses: number[] = []): Promise<Receiver> {
  const got: Delivery[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      got.push({ at: Date.now(), headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  // Port 0: the kernel picks a free port as it binds, so no other process can take it in between.
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    got,
    server,
    async waitFor(done, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done(got)) {
        if (Date.now() > deadline) throw new Error(`the receiver never got what was expected: ${JSON.stringify(got.map((d) => d.body))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return got;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
