/** Makes @cloudflare/vitest-pool-workers wrap a class's prototype in one Proxy, not one per construction (see the .mjs). */
export function patchPoolWorkers(): void;
