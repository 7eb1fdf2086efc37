// Types the `env` of cloudflare:test as the Worker's own Env.
import type { Env as WorkerEnv } from "../../worker/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
