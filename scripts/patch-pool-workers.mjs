// One fix to @cloudflare/vitest-pool-workers, applied by vitest.workers.config.ts before its pool
// starts, so it holds however the workerd tests are launched (npm test, npx vitest, after any npm ci)
// and nothing ships to the package's users (scripts/ is not in package.json "files").
//
// The pool wraps each Durable Object and entrypoint class's prototype in a Proxy (so an unknown RPC
// property gets a helpful error), but it does so on every construction, each Proxy around the last.
// In an isolate that runs many test files the chain grows with every object constructed until a
// property read overflows the stack ("Maximum call stack size exceeded at new Class"). The Proxy's
// handler captures nothing of a construction, so one Proxy made at the first construction answers
// every read exactly as the chain did. 0.23.0 still has the growing chain.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const VERSION = "0.15.1";

const GROWING = `	function Class(...args) {
		Class.prototype = new Proxy(Class.prototype, { get(target, key, receiver) {
			const value = Reflect.get(target, key, receiver);
			if (value !== void 0) return value;
			if (typeof key === "symbol" || IGNORED_KEYS.includes(key)) return;
			return getUnknownPrototypeKey.call(receiver, key);
		} });
		return Reflect.construct(superClass, args, Class);
	}`;

const ONCE = `	let proxied = false;
	function Class(...args) {
		if (!proxied) {
			proxied = true;
			Class.prototype = new Proxy(Class.prototype, { get(target, key, receiver) {
				const value = Reflect.get(target, key, receiver);
				if (value !== void 0) return value;
				if (typeof key === "symbol" || IGNORED_KEYS.includes(key)) return;
				return getUnknownPrototypeKey.call(receiver, key);
			} });
		}
		return Reflect.construct(superClass, args, Class);
	}`;

/** Makes the pool's prototype Proxy once per class; a no-op when already done. Throws if the pool is not the version this fix was written for. */
export function patchPoolWorkers() {
  const root = new URL("../node_modules/@cloudflare/vitest-pool-workers/", import.meta.url);
  const { version } = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
  const file = fileURLToPath(new URL("dist/worker/lib/cloudflare/test-internal.mjs", root));
  const source = readFileSync(file, "utf8");
  if (source.includes(ONCE)) return;
  if (version !== VERSION || !source.includes(GROWING)) {
    throw new Error(`scripts/patch-pool-workers.mjs fixes @cloudflare/vitest-pool-workers ${VERSION}, not ${version}: see whether createProxyPrototypeClass still wraps the prototype on every construction, then update or drop the fix`);
  }
  writeFileSync(file, source.replace(GROWING, ONCE));
}
