// Every `baton …` command the README and the guides show in a code block is one the CLI accepts:
// each is parsed by its command's own parser (unknown options, missing or extra arguments and bad
// values are usage errors), so a renamed option or a changed argument list turns a page red.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseInvocation } from "../../cli/lib/command.ts";
import { definedCommands } from "../../scripts/docs/cli-help.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGES = ["README.md", "docs/security.md", ...readdirSync(join(ROOT, "docs/guides")).filter((f) => f.endsWith(".md")).map((f) => `docs/guides/${f}`)];

/** Shell words up to the end of the command (a comment, `)`, `|`, `;`), quotes removed. */
function words(line: string): string[] {
  const out: string[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      word ??= "";
    } else if (/\s/.test(ch)) {
      if (word !== null) out.push(word);
      word = null;
    } else if (")|;".includes(ch) || (ch === "#" && word === null)) {
      break;
    } else {
      word = (word ?? "") + ch;
    }
  }
  if (word !== null) out.push(word);
  return out;
}

/** `baton …` invocations in the code blocks of a page; synopses (`[OPTIONS]`) and printed output (`baton serve x:`) are not. */
function invocations(page: string): string[][] {
  const text = readFileSync(join(ROOT, page), "utf8");
  const found: string[][] = [];
  for (const [, lang, block] of text.matchAll(/```(\w*)\n([\s\S]*?)```/g)) {
    if (!["", "sh"].includes(lang!)) continue;
    for (const line of block!.split("\n")) {
      const at = line.search(/(?:^|\$\(|\$ )\s*(?:npx )?baton \w/);
      if (at === -1) continue;
      const command = words(line.slice(at).replace(/^\$\(?\s*/, "").replace(/^npx /, ""));
      if (command.some((w) => w.startsWith("[") || w.endsWith(":"))) continue;
      found.push(command.slice(1));
    }
  }
  return found;
}

describe("commands shown in the docs", () => {
  const cases = PAGES.flatMap((page) => invocations(page).map((argv) => [page, argv.join(" "), argv] as const));

  it("finds the commands of the README's quick start and of the guides", () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  it.each(cases)("%s: baton %s", async (_, __, argv) => {
    const commands = await definedCommands();
    const name = commands.has(`${argv[0]} ${argv[1]}`) ? `${argv[0]} ${argv[1]}` : argv[0]!;
    const command = commands.get(name);
    expect(command, `no command ${name}`).toBeDefined();
    expect(() => parseInvocation(command!, argv.slice(name.split(" ").length))).not.toThrow();
  });
});
