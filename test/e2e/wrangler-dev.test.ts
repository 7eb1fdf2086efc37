// The end-to-end helper that starts `wrangler dev`: a port found free and then taken by another
// process before wrangler binds it (lanes and other suites run beside) costs one more start-up on
// another port, not a failed suite.
import { createServer, type Server } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

let dev: DevServer | undefined;
let squatter: Server | undefined;
afterAll(async () => {
  await dev?.stop();
  squatter?.close();
});

describe("starting wrangler dev for a test", () => {
  it("when another process takes the chosen port before wrangler binds it, starts again on another port", async () => {
    squatter = createServer();
    await new Promise<void>((resolve) => squatter!.listen(0, "127.0.0.1", resolve));
    const taken = (squatter.address() as { port: number }).port;
    const offered: number[] = [];
    dev = await startWranglerDev({
      pickPort: async () => {
        const port = offered.length === 0 ? taken : await freePort();
        offered.push(port);
        return port;
      },
    });
    expect(offered[0]).toBe(taken);
    expect(offered).toHaveLength(2);
    expect(dev.port).toBe(offered[1]);
    expect((await fetch(`${dev.url}/agents/x/presence`, { headers: { authorization: "Bearer baton-dev-token" } })).status).toBe(200);
  }, 120_000); // two start-ups, the first one failing
});
