// Secrets an agent object hands out (run keys, blob ids) and how it compares them.

/** 128 random bits as hex. */
export function randomHex128(): string {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compares two secrets in constant time, as auth.ts compares token hashes. */
export function sameSecret(given: string, stored: string | null): boolean {
  if (stored === null) return false;
  const [a, b] = [new TextEncoder().encode(given), new TextEncoder().encode(stored)];
  return a.byteLength === b.byteLength && crypto.subtle.timingSafeEqual(a, b);
}
