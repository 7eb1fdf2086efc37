// Which web pages may use this coordinator. A browser says which page a request comes from in its
// Origin header, and a page on any site can open a WebSocket to 127.0.0.1 (no CORS check applies
// to sockets) with the public dev token in its subprotocol. So a request that carries an Origin
// other than the coordinator's own is refused (403) unless BATON_ALLOWED_ORIGINS lists it: socket
// upgrades (serve, observe) and HTTP alike, whatever the token. The dashboard, served from the
// coordinator's own origin, is unaffected, and so are clients that send no Origin (the CLI, the
// Node and Python clients, curl): Origin is a browser's word about a page, not an identity.
// A page can also rebind its own name to 127.0.0.1, so its Origin and Host match: that page knows
// no real token, but it knows the public dev token, and a browser sends no Origin at all on its
// same-origin GETs. So the dev token signs a request only when it is addressed to a loopback name
// (its Host and its URL: localhost, 127.0.0.0/8, [::1]), and is taken from a browser only on a
// loopback origin (or one BATON_ALLOWED_ORIGINS lists). Real tokens are not affected: a rebound
// page does not know them.
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
export const PUBLIC_DEV_TOKEN = "baton-dev-token";

/** A host name as URL.hostname gives it, without trailing dots: loopback by name or address? */
function loopbackHost(hostname: string): boolean {
  const host = hostname.replace(/\.+$/, "");
  return host === "localhost" || host.endsWith(".localhost") || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The host name of a Host header or an origin as the URL parser reads it (lowercase, IPv4 forms as dotted quads), or "" when unreadable. */
function hostnameOf(hostOrOrigin: string, isOrigin: boolean): string {
  try {
    return new URL(isOrigin ? hostOrOrigin : `http://${hostOrOrigin}`).hostname;
  } catch {
    return "";
  }
}

/**
 * The refusal for the public dev token on a request addressed to a name that is not loopback (its
 * Host header or its URL: a name rebound to this machine), or sent by a browser from a page whose
 * origin is not loopback; null otherwise, and always for any other token.
 */
export function refuseRebindingDevToken(request: Request, token: string | null, allowed: ReadonlySet<string>): Response | null {
  if (token !== PUBLIC_DEV_TOKEN) return null;
  const host = request.headers.get("host");
  const addressed = [new URL(request.url).hostname, ...(host === null ? [] : [hostnameOf(host, false)])].find((h) => !loopbackHost(h));
  if (addressed !== undefined) {
    return errorResponse(403, "forbidden",
      `the public dev token is refused on requests addressed to ${JSON.stringify(addressed)}: it signs requests to a loopback name only (localhost, 127.0.0.0/8 or [::1]); use a token of your own there`);
  }
  const origin = request.headers.get("origin");
  if (origin === null || allowed.has(origin) || loopbackHost(hostnameOf(origin, true))) return null;
  return errorResponse(403, "forbidden",
    `the public dev token is refused from web pages on ${origin}: browsers may use it on a loopback origin (http://127.0.0.1 or http://localhost) only; list other origins in BATON_ALLOWED_ORIGINS`);
}
