// Stands in, in the Worker's bundle only (wrangler.toml [alias]), for four libraries the MCP SDK's
// server imports for cases baton's endpoint never meets: `ajv` and `ajv-formats` check a client's
// answer to an elicitation against its JSON Schema (baton never elicits: a person answers out of
// band, with the answer scope), and `zod/v3` and `zod-to-json-schema` handle tools written with
// zod 3 (baton's are zod 4, zod/mini). Reaching any of them throws, saying so.
const absent = (what: string) => new Error(`${what} is not bundled in the baton Worker (worker/mcp/absent.ts)`);

export default class AbsentAjv {
  constructor() {
    throw absent("ajv");
  }
}

export function object(): never {
  throw absent("zod 3");
}

export function zodToJsonSchema(): never {
  throw absent("zod-to-json-schema");
}
