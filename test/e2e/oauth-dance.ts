// An OAuth 2.1 client in plain fetch, as a remote MCP host does it against baton: dynamic client
// registration, an authorization request with PKCE (S256), the person's sign-in page (GET, then
// the form POST with a pasted baton token or a sign-in code from `baton login --code`, from a
// client address of its own), the code exchange and refresh. Shared by the workerd
// tests (SELF.fetch) and the e2e file against `wrangler dev` (global fetch).
export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>;

export const REDIRECT_URI = "http://127.0.0.1:9/callback";

export interface Client {
  client_id: string;
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  return { verifier, challenge };
}

let addressesGiven = Math.floor(Math.random() * 0x10000);

/**
 * A client address of its own (198.18.0.0/15, for tests) for each registration, as distinct remote
 * hosts have: registration is budgeted per address, and without one every test shares a budget.
 */
export function clientAddress(): string {
  const n = addressesGiven++ % 0x20000;
  return `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

export async function registerClient(f: FetchLike, base: string, name = "test host"): Promise<Client> {
  const res = await f(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": clientAddress() },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: name, token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"], response_types: ["code"] }),
  });
  if (res.status !== 201) throw new Error(`registration answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Client;
}

const unescapeHtml = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));

/** The consent binding cookie the page set (the only cookie it sets), as a browser sends it back. */
function cookiesOf(res: Response): string {
  return (res.headers.get("set-cookie") ?? "").split(";")[0]!;
}

/** The sign-in page as a client's browser opens it, with what its form needs to post back. */
export interface OpenedPage {
  status: number;
  html: string;
  cookie: string;
  handle: string;
  query: string;
  verifier: string;
  state: string;
}

export async function openSignIn(f: FetchLike, base: string, client: Client, scope: string | null): Promise<OpenedPage> {
  const { verifier, challenge } = await pkce();
  const state = base64url(crypto.getRandomValues(new Uint8Array(8)));
  const params = new URLSearchParams({
    response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: "S256", state, resource: base,
    ...(scope === null ? {} : { scope }),
  });
  return { ...(await openPage(f, `${base}/authorize?${params}`)), verifier, state };
}

/** The sign-in page at `url` (an authorization URL a client built), with what its form posts back. */
export async function openPage(f: FetchLike, url: string): Promise<Omit<OpenedPage, "verifier" | "state">> {
  const res = await f(url, { redirect: "manual" });
  const html = await res.text();
  return {
    status: res.status, html, cookie: cookiesOf(res),
    handle: unescapeHtml(html.match(/name="handle" value="([^"]*)"/)?.[1] ?? ""),
    query: unescapeHtml(html.match(/name="query" value="([^"]*)"/)?.[1] ?? ""),
  };
}

export interface SignInForm {
  /** A baton token, or a sign-in code (`baton login --code`), or both or neither to see them refused. */
  token?: string;
  code?: string;
  scopes: string[];
  agents?: string;
  decision?: "approve" | "deny";
  /** The browser's address (CF-Connecting-IP): sign-in codes typed are counted per address; default a fresh one. */
  address?: string;
}

/** Posts the page's form; a 302's Location (back to the client) or the page shown again. */
export async function submitSignIn(f: FetchLike, base: string, page: Pick<OpenedPage, "handle" | "query" | "cookie">, form: SignInForm): Promise<{ status: number; location: string | null; html: string }> {
  const body = new URLSearchParams({ handle: page.handle, query: page.query, token: form.token ?? "", code: form.code ?? "", agents: form.agents ?? "", decision: form.decision ?? "approve" });
  for (const scope of form.scopes) body.append("scope", scope);
  const res = await f(`${base}/authorize`, {
    method: "POST", redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: page.cookie, origin: base, "cf-connecting-ip": form.address ?? clientAddress() },
    body: body.toString(),
  });
  return { status: res.status, location: res.headers.get("location"), html: await res.text() };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  scope: string;
  expires_in: number;
}

async function tokenRequest(f: FetchLike, base: string, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await f(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export async function exchangeCode(f: FetchLike, base: string, client: Client, page: OpenedPage, location: string): Promise<Tokens> {
  const back = new URL(location);
  if (back.searchParams.get("state") !== page.state) throw new Error(`state came back as ${back.searchParams.get("state")}`);
  const code = back.searchParams.get("code");
  if (code === null) throw new Error(`no code in ${location}`);
  const res = await tokenRequest(f, base, { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: page.verifier, resource: base });
  if (res.status !== 200) throw new Error(`code exchange answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as unknown as Tokens;
}

export function refresh(f: FetchLike, base: string, client: Client, refreshToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return tokenRequest(f, base, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: client.client_id });
}

/** The whole dance for a token (or a sign-in code) and the scopes and agents a person approves: the client's tokens. */
export async function authorize(f: FetchLike, base: string, form: SignInForm, requestScope: string | null = null): Promise<{ client: Client; tokens: Tokens }> {
  const client = await registerClient(f, base);
  const page = await openSignIn(f, base, client, requestScope);
  if (page.status !== 200) throw new Error(`sign-in page answered ${page.status}: ${page.html}`);
  const signed = await submitSignIn(f, base, page, form);
  if (signed.status !== 302 || signed.location === null) throw new Error(`sign-in answered ${signed.status}: ${signed.html}`);
  return { client, tokens: await exchangeCode(f, base, client, page, signed.location) };
}
