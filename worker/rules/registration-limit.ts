// Who a dynamic client registration is charged to, and a sign-in code typed on the OAuth sign-in
// page (oauth/code-sign-in.ts, its own budget). Neither takes a token, so each is budgeted per
// client address (CF-Connecting-IP); an IPv6 host is usually handed a whole /64, so an IPv6
// address is charged to its /64, else one host could go on without limit by rotating addresses.
// A code typed is a guess at a secret, and a host with a routed /48 holds 65,536 /64s: it is
// charged to its /48.

/** wrangler.toml's `OAUTH_REGISTER_LIMIT` (`simple.limit`, per 60 s); test/unit/registration-limit.test.ts holds them equal. */
export const REGISTRATIONS_PER_MINUTE = 20;

/** The budget key for a client address: an IPv4 address itself, an IPv6 address its /64 ("2001:db8:0:1::/64"), "unknown" without one. */
export function registrationKey(address: string | null): string {
  return addressKey(address, 4);
}

/** The budget key for sign-in codes typed from a client address: as registrationKey's, but an IPv6 address its /48, under "typed:". */
export function codeTryKey(address: string | null): string {
  return `typed:${addressKey(address, 3)}`;
}

/** An IPv4 address itself, an IPv6 address the prefix of its first `v6Groups` 16-bit groups. */
function addressKey(address: string | null, v6Groups: 3 | 4): string {
  const raw = (address ?? "").trim().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "").toLowerCase();
  if (raw === "") return "unknown";
  if (!raw.includes(":")) return ipv4(raw) ?? raw.slice(0, 64);
  const groups = ipv6Groups(raw);
  if (groups === null) return raw.slice(0, 64);
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  return `${groups.slice(0, v6Groups).map((g) => g.toString(16)).join(":")}::/${v6Groups * 16}`;
}

function ipv4(text: string): string | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.map(Number).join(".");
}

/** The eight 16-bit groups of an IPv6 address (with "::" and a trailing dotted IPv4 expanded), or null when it is not one. */
function ipv6Groups(text: string): number[] | null {
  let body = text;
  const tail: number[] = [];
  const lastColon = body.lastIndexOf(":");
  if (body.slice(lastColon + 1).includes(".")) {
    const v4 = ipv4(body.slice(lastColon + 1));
    if (v4 === null) return null;
    const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    body = body.slice(0, lastColon + 1) + "0"; // a placeholder group, dropped below
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === "" ? [] : s.split(":"));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (tail.length > 0) (halves.length === 2 ? rest : head).pop();
  const hex = [...head, ...rest];
  if (!hex.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  const given = hex.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return null;
  const zeros = new Array<number>(8 - given).fill(0);
  const numbers = (list: string[]) => list.map((g) => parseInt(g, 16));
  return halves.length === 2 ? [...numbers(head), ...zeros, ...numbers(rest), ...tail] : [...numbers(head), ...tail];
}
