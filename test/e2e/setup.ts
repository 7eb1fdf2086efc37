// Every end-to-end file: each fetch of the test process asks for a connection of its own
// (`connection: close`) instead of reusing an idle pooled one. A test blocks its event loop in
// spawnSync (runBaton) for seconds; past wrangler dev's keep-alive (about 5 s) the server closes
// the idle connection, the blocked process never sees it, and the next request written on it fails
// "other side closed" (seen under load, with a shared server and with a server per file alike).
// The files of a project share one worker (isolate off) and this runs before each: the fetch is wrapped once.
const WRAPPED = Symbol.for("baton.e2e.connectionClose");
const pooledFetch = globalThis.fetch;

if (!(WRAPPED in pooledFetch)) {
  globalThis.fetch = Object.assign((input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has("connection")) headers.set("connection", "close");
    return pooledFetch(input, { ...init, headers });
  }, { [WRAPPED]: true });
}
