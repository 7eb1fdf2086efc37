// The scopes a token may carry (`account:name:scope+scope:sha256hex` in BATON_TOKENS), as GET
// /whoami names them. A leaf: which route needs which scope is worker/scopes.ts.
export const SCOPES = ["read", "send", "serve", "answer", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

export const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/;
