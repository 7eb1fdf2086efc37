// Object names: which Durable Object owns what. The Worker derives a stub from these names and
// each object reads its own identity back from `ctx.id.name`, never from a request header.
// Account names cannot contain ':' (auth.ts), so the first ':' separates the parts.

export function agentObjectName(account: string, agent: string): string {
  return `${account}:${agent}`;
}

export function directoryObjectName(account: string): string {
  return `directory:${account}`;
}

/** The (account, agent) an agent object serves, from its own id; null for an id made another way. */
export function agentOfObject(id: DurableObjectId): { account: string; agent: string } | null {
  const name = id.name;
  const at = name?.indexOf(":") ?? -1;
  if (name === undefined || at <= 0) return null;
  return { account: name.slice(0, at), agent: name.slice(at + 1) };
}

/** The account a directory object lists, from its own id. */
export function accountOfDirectory(id: DurableObjectId): string | null {
  const name = id.name;
  return name?.startsWith("directory:") ? name.slice("directory:".length) : null;
}
