// What a webhook may reach, and what of its deliveries each token sees. A webhook makes the
// coordinator send requests where an admin says, and each attempt's status and error tell what
// answered there: aimed at loopback, a private network, link-local (where cloud metadata lives)
// or another reserved address, that is a probe of the coordinator's own network. So such URLs are
// refused unless BATON_WEBHOOK_ALLOW_PRIVATE is "true" (`.dev.vars` sets it for `wrangler dev`,
// whose receivers live on 127.0.0.1), URLs never carry a user name or password, and only tokens
// that may configure webhooks (admin) see the receiver's host and each attempt's status and error;
// every other token sees the counts. The host is checked as a resolver reads it (resolverName): the
// WHATWG parser has already lowercased it, decoded percent escapes and IDNA, and turned `2130706433`
// and `0x7f.1` into 127.0.0.1; a resolver also ignores every trailing dot. A public name that
// resolves to a private address is not caught here.
import type { WebhookReport } from "../wire/webhooks.ts";

const NAMES = [/^localhost$/, /\.localhost$/, /\.localdomain$/, /^metadata$/, /\.internal$/, /\.local$/, /\.home\.arpa$/];

/** [first address as a 32-bit number, prefix length, what it is] */
const V4_BLOCKS: [number, number, string][] = [
  [0x00000000, 8, "a reserved address"],
  [0x0a000000, 8, "a private address"],
  [0x64400000, 10, "a private (carrier-grade NAT) address"],
  [0x7f000000, 8, "a loopback address"],
  [0xa9fe0000, 16, "a link-local address (cloud metadata lives there)"],
  [0xac100000, 12, "a private address"],
  [0xc0000000, 24, "a reserved address"],
  [0xc0a80000, 16, "a private address"],
  [0xc6120000, 15, "a reserved address"],
  [0xe0000000, 3, "a multicast or reserved address"],
];

function v4Kind(octets: number[]): string | null {
  const value = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  for (const [base, bits, kind] of V4_BLOCKS) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if ((value & mask) >>> 0 === base) return kind;
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address as the URL parser writes it (compressed, no brackets, no dotted tail). */
function v6Groups(address: string): number[] | null {
  const [head, tail] = address.split("::") as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function v6Kind(groups: number[]): string | null {
  const [a, b, c, d, e, f, g, h] = groups as [number, number, number, number, number, number, number, number];
  const zeroHead = a === 0 && b === 0 && c === 0 && d === 0 && e === 0;
  if (zeroHead && f === 0 && g === 0 && h <= 1) return h === 1 ? "a loopback address" : "a reserved address";
  // Forms that carry an IPv4 address in their last 32 bits reach it: IPv4-compatible (::a.b.c.d),
  // IPv4-mapped (::ffff:a.b.c.d), its translated form (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96 and
  // the local 64:ff9b:1::/48). 6to4 (2002:AABB:CCDD::) carries it in groups two and three.
  const embedsV4 = (zeroHead && (f === 0 || f === 0xffff)) || (a === 0 && b === 0 && c === 0 && d === 0 && e === 0xffff && f === 0)
    || (a === 0x64 && b === 0xff9b && ((c === 0 && d === 0 && e === 0 && f === 0) || c === 1));
  if (embedsV4) return v4Kind([g >> 8, g & 0xff, h >> 8, h & 0xff]) ?? (c === 1 ? "a local NAT64 address" : null);
  if (a === 0x2002) return v4Kind([b >> 8, b & 0xff, c >> 8, c & 0xff]);
  if ((a & 0xffc0) === 0xfec0) return "a site-local address";
  if ((a & 0xfe00) === 0xfc00) return "a private address";
  if ((a & 0xffc0) === 0xfe80) return "a link-local address";
  if ((a & 0xff00) === 0xff00) return "a multicast address";
  return null;
}

/**
 * `hostname` (as URL.hostname gives it) as a resolver reads it: without its trailing dots, however
 * many (`localhost..` is localhost), and parsed again without them, so an IPv4 form the dots hid
 * from the URL parser (`0x7f.1..`, `127.1.`) becomes its dotted quad. Exported for its tests.
 */
export function resolverName(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host === "" || host.startsWith("[")) return host;
  try {
    return new URL(`http://${host}/`).hostname.replace(/\.+$/, "");
  } catch {
    return host;
  }
}

/** What kind of non-public place `hostname` (as URL.hostname gives it) is, or null for a public one. */
function privateTarget(hostname: string): string | null {
  const host = resolverName(hostname);
  if (host === "") return "an empty name";
  if (host.startsWith("[")) {
    const groups = v6Groups(host.slice(1, -1));
    return groups === null ? "an unreadable IPv6 address" : v6Kind(groups);
  }
  const v4 = host.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/);
  if (v4) return v4Kind(v4.slice(1).map(Number));
  if (NAMES.some((name) => name.test(host))) return "a local or internal name";
  // A name without a dot (`vm`, `kubernetes`, `instance-data`) is resolved by the local search
  // domains and /etc/hosts, never by public DNS: it names a machine near the coordinator.
  return host.includes(".") ? null : "a single-label (local) name";
}

/**
 * Why a webhook may not be sent to `raw` (an http(s) URL the schema accepted), or null when it may.
 * `allowPrivate`: BATON_WEBHOOK_ALLOW_PRIVATE is "true".
 */
export function webhookTargetRefusal(raw: string, allowPrivate: boolean): string | null {
  const url = new URL(raw);
  if (url.username !== "" || url.password !== "") {
    return "url must not carry a user name or password: deliveries are signed (baton-signature), and GET shows the URL";
  }
  const kind = privateTarget(url.hostname);
  if (kind === null || allowPrivate) return null;
  return `url must not point at ${kind} (${url.hostname}): set BATON_WEBHOOK_ALLOW_PRIVATE=true to allow it (wrangler dev does, in .dev.vars)`;
}

/** What a token that may not configure webhooks sees of the deliveries: the counts, not where they went or what answered. */
export function webhookCounts(report: WebhookReport): WebhookReport {
  return { ...report, host: null, last_status: null, last_error: null };
}
