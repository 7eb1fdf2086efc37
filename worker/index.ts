// The Worker: every request goes through the pipeline (pipeline.ts): authenticate, find its route
// in the route table (wire/routes.ts), check its token's scope, validate configuration, and hand it
// to the route's handler (routes.ts), which calls the object that owns the (account, name) pair by
// typed RPC; only socket upgrades are forwarded by fetch. Objects read who they are from their own
// name (names.ts), so nothing identifying rides in a header; handlers read the caller with
// callerOf(request). Static dashboard files are served by the assets binding before this runs.
// A caller is a baton token or, for remote hosts, an OAuth access token (oauth/server.ts), whose
// grant may be limited to agents: checked in the pipeline after the scope, for every route alike.
import type { Env } from "./env.ts";
import { handle } from "./pipeline.ts";

export { AgentCoordinator } from "./objects/agent-object.ts";
export { LeaseShard } from "./objects/lease-shard.ts";
export { AgentDirectory } from "./objects/directory-object.ts";
export { SignInCodes } from "./objects/sign-in-codes-object.ts";

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    return handle(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
