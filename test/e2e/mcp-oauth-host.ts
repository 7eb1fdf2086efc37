// A remote MCP host as the official SDK builds one when a server asks for OAuth: a Client over
// StreamableHTTPClientTransport with an OAuthClientProvider. The SDK finds the metadata from the
// 401, registers the host, sends the person to baton's sign-in page with PKCE, and after
// `finishAuth` exchanges the code and refreshes by itself. Here the person's part (the page, a
// baton token pasted, the scopes ticked) is played by fetch, as oauth-dance.ts does it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { clientAddress, openPage, REDIRECT_URI, submitSignIn, type SignInForm } from "./oauth-dance.ts";

/** What the host keeps between runs: its registration and its tokens (in memory here, in a file or keychain for a real host). */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  /** The authorization code the sign-in page sent back, for finishAuth. */
  code: string | null = null;
  pages = 0;

  constructor(private readonly person: (url: URL) => Promise<string>) {}

  get redirectUrl(): string {
    return REDIRECT_URI;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "sdk host", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"], response_types: ["code"] };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.pages++;
    this.code = await this.person(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/**
 * The person at the page: opens the authorization URL, signs in with `form` and returns the code
 * the redirect back to the host carries (checking the SDK's state came back with it).
 */
export function personSigningIn(base: string, form: SignInForm): (url: URL) => Promise<string> {
  return async (url) => {
    const page = await openPage(fetch, url.href);
    if (page.status !== 200) throw new Error(`sign-in page answered ${page.status}: ${page.html}`);
    const signed = await submitSignIn(fetch, base, page, form);
    if (signed.status !== 302 || signed.location === null) throw new Error(`sign-in answered ${signed.status}: ${signed.html}`);
    const back = new URL(signed.location);
    if (back.searchParams.get("state") !== url.searchParams.get("state")) throw new Error(`state came back as ${back.searchParams.get("state")}`);
    const code = back.searchParams.get("code");
    if (code === null) throw new Error(`no code in ${signed.location}`);
    return code;
  };
}

/** Each registration from an address of its own (registration is budgeted per address), as distinct hosts have. */
const hostFetch: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!url.pathname.endsWith("/oauth/register")) return fetch(input, init);
  const headers = new Headers(init?.headers);
  headers.set("cf-connecting-ip", clientAddress());
  return fetch(input, { ...init, headers });
};

const transportFor = (base: string, provider: OAuthClientProvider) =>
  new StreamableHTTPClientTransport(new URL("/mcp", base), { authProvider: provider, fetch: hostFetch });

/**
 * Connects as a host that has never met this server: the first connect is refused and sends the
 * person to sign in; the host then finishes with the code and connects again with its tokens.
 */
export async function connectWithOAuth(base: string, provider: MemoryOAuthProvider): Promise<Client> {
  const capabilities = { capabilities: { tasks: { requests: { tools: { call: {} } } } } };
  const first = transportFor(base, provider);
  try {
    await new Client({ name: "baton-oauth-test-host", version: "1.0.0" }, capabilities).connect(first);
    throw new Error("the server let a host in without signing in");
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  if (provider.code === null) throw new Error("the SDK never sent the person to sign in");
  await first.finishAuth(provider.code);
  const client = new Client({ name: "baton-oauth-test-host", version: "1.0.0" }, capabilities);
  await client.connect(transportFor(base, provider));
  return client;
}
