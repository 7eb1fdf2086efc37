// Which web pages may use this coordinator. A browser says which page a request comes from in its
// Origin header, and a page on any site can open a WebSocket to 127.0.0.1 (no CORS check applies
// to sockets) with the public dev token in its subprotocol. So a request that carries an Origin
// other than the coordinator's own is refused (403) unless BATON_ALLOWED_ORIGINS lists it: socket
// upgrades (serve, observe) and HTTP alike, whatever the token. The dashboard, served from the
// coordinator's own origin, is unaffected, and so are clients that send no Origin (the CLI, the
// Node and Python clients, curl): Origin is a browser's word about a page, not an identity.
// A page can also rebind its own name to 127.0.0.1, so its Origin and Host match: that page knows
// no real token, but it knows the public dev token. So the dev token is taken from a browser only
// on a loopback origin (or one BATON_ALLOWED_ORIGINS lists).
import { errorResponse } from "./wire/protocol.ts";

export type AllowedOrigins = { ok: true; origins: ReadonlySet<string> } | { ok: false; message: string };

/** BATON_ALLOWED_ORIGINS: comma-separated origins (scheme, host and port only), e.g. `https://ops.example.com`. */
export function parseAllowedOrigins(raw: string | undefined): AllowedOrigins {
  const origins = new Set<string>();
  const entries = (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  for (const [index, entry] of entries.entries()) {
    let origin: string | null = null;
    try {
      origin = new URL(entry).origin;
    } catch {
      // not a URL at all
    }
    if (origin === null || origin === "null" || origin !== entry.replace(/\/$/, "").toLowerCase()) {
      return { ok: false, message: `BATON_ALLOWED_ORIGINS entry ${index + 1} must be an origin such as https://ops.example.com (scheme, host and port; no path), got ${JSON.stringify(entry)}` };
    }
    origins.add(origin);
  }
  return { ok: true, origins };
}

/** The refusal for a request from a page on another origin, or null when it may go on. */
export function refuseForeignOrigin(request: Request, allowed: ReadonlySet<string>): Response | null {
  const origin = request.headers.get("origin");
  if (origin === null) return null;
  const own = new URL(request.url).origin;
  if (origin === own || allowed.has(origin)) return null;
  return errorResponse(403, "forbidden",
    `requests from web pages on ${origin} are refused: this coordinator answers browsers on its own origin (${own}) only; list other origins in BATON_ALLOWED_ORIGINS`);
}

/** The token the README publishes for local use: known to every page on the web. */
const PUBLIC_DEV_TOKEN = "baton-dev-token";

function loopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The refusal for the public dev token sent by a browser from a name that is not loopback (a rebound name), or null. */
export function refuseRebindingDevToken(request: Request, token: string | null, allowed: ReadonlySet<string>): Response | null {
  const origin = request.headers.get("origin");
  if (origin === null || token !== PUBLIC_DEV_TOKEN || allowed.has(origin)) return null;
  let hostname = "";
  try {
    hostname = new URL(origin).hostname;
  } catch {
    // not a URL: refused below
  }
  if (loopbackHost(hostname)) return null;
  return errorResponse(403, "forbidden",
    `the public dev token is refused from web pages on ${origin}: browsers may use it on a loopback origin (http://127.0.0.1 or http://localhost) only; list other origins in BATON_ALLOWED_ORIGINS`);
}
