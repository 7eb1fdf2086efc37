// Durable Object tests, run inside workerd by the Workers pool with a one-second heartbeat TTL.
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          BATON_HEARTBEAT_TTL_SECONDS: "1",
          BATON_PRESENCE_SCAN_SECONDS: "60",
          BATON_HISTORY_MESSAGES: "20",
          BATON_PREFERENCE_HYSTERESIS_SECONDS: "2",
          BATON_RESTART_GRACE_SECONDS: "1",
          // "baton-dev-token" for account dev, "other-account-token" for account other.
          BATON_TOKENS: "dev:8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371,other:c3a4c58fd94addae9223ecc52d7b031c6691fdddf53e745e321d8e8bee37d896",
        },
      },
    }),
  ],
  test: { include: ["test/worker/**/*.test.ts"], testTimeout: 20_000 },
});
