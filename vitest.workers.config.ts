// Durable Object tests, run inside workerd by the Workers pool. Most run with a one-second
// heartbeat TTL, so expiry is quick to drive. The hibernation tests run apart with a long TTL (an
// agent object with open serve connections wakes at least once per TTL for its presence scan, and
// workerd only evicts an object after about ten idle seconds), and so do the bad-name tests, which
// assert nothing about expiry and must not lose their scene to a busy machine.
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { patchPoolWorkers } from "./scripts/patch-pool-workers.mjs";

/**
 * "baton-dev-token" for account dev (old form: every scope), "other-account-token" for other; limits,
 * quiet, hooks, directory, clock and leases are used by one test file each. The named dev tokens ("dev-<name>-token") carry
 * one scope each (scopes.test.ts). "dev-twin-token" is a second unnamed dev token (also `default`), for keys
 * that must tell two tokens of one name apart (a2a.test.ts). "dev-minter-token" (read) makes sign-in codes in
 * sign-in-code-guards.test.ts only, so its minute's mint budget is that file's alone.
 */
const TOKENS = [
  "dev:8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371",
  "dev:0be1962c90b21cab8ed837d7a9ceef49cba245f603d4ba2613b02cc8344069a2",
  "dev:runner:serve:cee9d12fb9fefdfafe98d97f5c8a247e071a0e6778089dee7cf2be571ee606d2",
  "dev:reader:read:47beeb95da92ee9485a13c613b44b1dd7ff064c2c2815902e1c2e6d765b3c8ad",
  "dev:sender:send:2870d819996b8d92fe0d8068619e243d796124ad8e7b0a16805944b271b1571d",
  "dev:admin:admin:1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd",
  "dev:person:answer:5d97975e822880bf6715c24d27cc46c0a95242e8206366545ac10778622359a9",
  "other:c3a4c58fd94addae9223ecc52d7b031c6691fdddf53e745e321d8e8bee37d896",
  "limits:aa0b0b640be388f2f301eac121e4a967967ea2d6ed081f83a28162b96954336c",
  "quiet:3637d14c21c7d7357d19e3fc2fb112085a2252d4d9045e9283f2d9e9ebb79174",
  "hooks:b5da29e51e9d28e0906db6490aa652740006768dd7ef0c0bbb2db3c9885ece83",
  "directory:65c4fcdc4b2d7396d1a45ff723640fd5e43ab59fd606860ad5d304c31f068265",
  "clock:996e3c9c6ab9ca0dace897be1a090df96d35666afbb32b3626d42574d65c8bbc",
  "leases:d098bb9e038d0756c2f0ba20857b22148244028455e0f8c76eef0ca1974f2ee6",
  "dev:minter:read:515a3a5d985ac900a4006a709d79b14353d164ad68d3202b93b1cc0ade919628",
].join(",");

/**
 * Every fetch the Worker and its objects make to the outside world lands here, so no test reaches
 * the network (a refused connection also makes workerd print an uncaught error). Webhook tests
 * post to `http://receiver.test/status/NNN`, which answers NNN, and to `http://receiver.test/hang`,
 * which never answers; anything else is 502.
 */
function outbound(request: Request): Response | Promise<Response> {
  const url = new URL(request.url);
  if (url.hostname === "receiver.test" && url.pathname === "/hang") return new Promise<Response>(() => {});
  const status = url.hostname === "receiver.test" ? Number(url.pathname.match(/^\/status\/(\d{3})$/)?.[1] ?? 404) : 502;
  return new Response(null, { status });
}

function workers(heartbeatTtlSeconds: string) {
  return cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      bindings: {
        BATON_HEARTBEAT_TTL_SECONDS: heartbeatTtlSeconds,
        BATON_PRESENCE_SCAN_SECONDS: "60",
        BATON_HISTORY_MESSAGES: "20",
        BATON_PREFERENCE_HYSTERESIS_SECONDS: "2",
        BATON_RESTART_GRACE_SECONDS: "1",
        // The smallest output budget, so output.test.ts passes it with a few frames.
        BATON_OUTPUT_BYTES_PER_MESSAGE: "65536",
        // Twice that per agent, so output.test.ts passes it with three messages.
        BATON_OUTPUT_BYTES_PER_AGENT: "131072",
        BATON_TOKENS: TOKENS,
        BATON_ALLOWED_ORIGINS: "https://ops.example",
        // As a deployment: webhook URLs at private addresses are refused (webhook-exposure.test.ts).
        BATON_WEBHOOK_ALLOW_PRIVATE: "false",
        // Tests move objects' clocks forward instead of sleeping (worker/objects/clock.ts); never set in wrangler.toml.
        BATON_TEST_CLOCK: "true",
      },
      outboundService: outbound,
    },
  });
}

const LONG_TTL = ["test/worker/hibernation.test.ts", "test/worker/bad-names.test.ts"];

// The files of a project share one isolate per pool worker (isolate: false): with an isolate each,
// every file started a Miniflare and a workerd of its own and loaded the Worker anew, which was most
// of the phase's CPU (10 files: 52 CPU-s isolated, 21 shared; the 50: 355 CPU-s before, about 150
// after). Sharing needs the pool's prototype Proxy made once per class, not once per object
// constructed (scripts/patch-pool-workers.mjs; before it, 160 tests overflowed the stack in a shared
// run), and files that touch nothing of each other's: each file's agents are unique, and an account
// whose directory a file counts or reconfigures is that file's alone (helpers.ts). A shared workerd
// answers later under load (earlier files' objects live on in it), so a test's agent clock stands
// still from its first connect (helpers.ts) and a test passes time to expire what it means to: with
// real time, 3 of 4 shared runs at load 9-16 lost a one-second TTL in a test or two.
patchPoolWorkers();

export default defineConfig({
  test: {
    teardownTimeout: 10_000,
    projects: [
      {
        plugins: [workers("1")],
        test: { name: "workers", isolate: false, setupFiles: ["test/worker/setup.ts"], include: ["test/worker/**/*.test.ts"], exclude: LONG_TTL, testTimeout: 20_000, hookTimeout: 30_000 },
      },
      {
        plugins: [workers("60")],
        test: { name: "long-ttl", isolate: false, setupFiles: ["test/worker/setup.ts"], include: LONG_TTL, testTimeout: 60_000, hookTimeout: 30_000 },
      },
    ],
  },
});
