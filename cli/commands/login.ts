// `baton login`: stores the coordinator URL and a bearer token in the user's config dir
// (file 0600, directory 0700), reading the token from stdin without echo. Never prints it.
// `baton login --code`: asks the coordinator for a one-time code that signs in as the token on
// the OAuth sign-in page, typed there instead of the token, and prints the code.
import { chmodSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CoordinatorError } from "../../client/errors.ts";
import { requestJson } from "../../client/http.ts";
import { SIGN_IN_CODE_LIMITS, signInCodeSchema } from "../../worker/wire/grants.ts";
import { agentListSchema } from "../../worker/wire/http-responses.ts";
import { defineCommand } from "../lib/command.ts";
import { checkedUrl, configPath, DEFAULT_URL, isLocalUrl, readStoredConfig, resolveConnection, type Connection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { routePath } from "../../worker/wire/routes.ts";

const TOKEN_SHAPE = /^\S{1,4096}$/;

export default defineCommand({
  path: ["login"],
  summary: "Check the token against the coordinator, then store the URL and token in your config file (mode 0600). " +
    "The token is read from stdin (typed without echo on a terminal); it is never printed. " +
    "With --code: print a one-time code to type on the OAuth sign-in page instead of the token.",
  positionals: [],
  options: {
    status: { type: "boolean", description: "show which URL is stored and whether a token is, without printing it" },
    code: {
      type: "boolean",
      description: `print a one-time sign-in code for the OAuth sign-in page instead (valid ${SIGN_IN_CODE_LIMITS.minutes} minutes, once), made with the stored token (or --token, BATON_TOKEN); stores nothing`,
    },
  },
  exitCodes: [{ code: 1, meaning: "the coordinator refused the token or could not be reached; nothing was stored" }],
  async run({ options }) {
    if (options.status && options.code) throw new UsageError("--status and --code do not go together");
    if (options.status) return printStatus(options.json);
    if (options.code) return printCode(resolveConnection(options), options.json);
    const url = checkedUrl(String(options.url || process.env.BATON_URL || DEFAULT_URL));
    const token = options.token !== undefined ? options.token : await readToken();
    if (!TOKEN_SHAPE.test(token)) throw new UsageError("a token is 1-4096 characters without spaces or line breaks");
    if (new URL(url).protocol === "http:" && !isLocalUrl(url)) {
      process.stderr.write(`warning: ${url} is plain http: the token crosses the network unencrypted; use https\n`);
    }
    try {
      await requestJson({ url, token }, "GET", routePath("/agents"), agentListSchema);
    } catch (err) {
      if (err instanceof CoordinatorError && err.code === "unauthorized") {
        throw new CLIError(`the coordinator at ${url} does not accept this token (check that it is the whole token, for this coordinator); nothing stored`);
      }
      throw new CLIError(`${err instanceof Error ? err.message : String(err)}; nothing stored`);
    }
    const path = configPath();
    writeConfig(path, { url, token });
    process.stdout.write(options.json
      ? `${JSON.stringify({ url, config_path: path, token_stored: true, verified: true })}\n`
      : `token accepted by ${url}; stored in ${path}\n`);
  },
});

/** Writes through a private temporary file and a rename, so the token is never readable by others, even briefly. */
function writeConfig(path: string, config: { url: string; token: string }): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const temp = join(dir, `.config.${process.pid}.${Date.now()}.tmp`);
  writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}

/** The token from stdin: typed without echo on a terminal, or the first line of a pipe. */
async function readToken(): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = "";
    for await (const chunk of stdin) text += String(chunk);
    return text.split(/\r?\n/)[0]!.trim();
  }
  // Echo goes off before the prompt shows, so nothing typed after the prompt can be echoed.
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  process.stderr.write("Token (input hidden): ");
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = "";
      const onData = (chunk: string) => {
        for (const ch of chunk) {
          if (ch === "\r" || ch === "\n" || ch === "\u0004") {
            stdin.off("data", onData);
            return resolve(typed.trim());
          }
          if (ch === "\u0003") {
            stdin.off("data", onData);
            return reject(new CLIError("login cancelled", 130));
          }
          if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
          else typed += ch;
        }
      };
      stdin.on("data", onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write("\n");
  }
}

/** Said with every code printed: a code is the token, for a while. */
const CODE_WARNING = `warning: anyone with this code can sign in as your token for ${SIGN_IN_CODE_LIMITS.minutes} minutes; never read it out, paste it into a chat or give it to anyone`;

/** The code on stdout (with the warning below it, or as JSON with the warning on stderr). */
async function printCode(conn: Connection, json: boolean): Promise<void> {
  const { code, expires_at } = await requestJson(conn, "POST", routePath("/sign-in-codes"), signInCodeSchema);
  if (json) {
    process.stdout.write(`${JSON.stringify({ code, expires_at, url: conn.url })}\n`);
    process.stderr.write(`${CODE_WARNING}\n`);
    return;
  }
  process.stdout.write(`sign-in code: ${code} (for ${conn.url}, valid ${SIGN_IN_CODE_LIMITS.minutes} minutes, once). Type it on the baton sign-in page instead of a token.\n${CODE_WARNING}\n`);
}

function printStatus(json: boolean): void {
  const path = configPath();
  const stored = readStoredConfig();
  let mode: number | null = null;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    // no file yet
  }
  const status = {
    config_path: path,
    url: stored.url ?? null,
    token_stored: stored.token !== undefined && stored.token !== "",
    file_mode: mode === null ? null : `0${mode.toString(8)}`,
    env_overrides: ["BATON_URL", "BATON_TOKEN"].filter((name) => Boolean(process.env[name])),
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(status)}\n`);
    return;
  }
  const lines = [
    `config: ${path}${mode === null ? " (not written yet)" : ""}`,
    `url: ${status.url ?? `(none stored; default ${DEFAULT_URL})`}`,
    `token: ${status.token_stored ? "stored" : "not stored"}`,
  ];
  if (status.env_overrides.length) lines.push(`environment overrides: ${status.env_overrides.join(", ")}`);
  if (mode !== null && (mode & 0o077) !== 0) lines.push(`warning: ${path} is readable by others (mode ${status.file_mode}); run chmod 600 on it`);
  process.stdout.write(`${lines.join("\n")}\n`);
}
