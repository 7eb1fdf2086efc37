// Stored JSON is read through its codec (worker/objects/stored-json.ts), and only there: a bare
// JSON.parse anywhere else in worker/objects fails this test. What the codec answers for good,
// malformed and misshapen text; what each store does with a corrupt row is test/worker/stored-json.test.ts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { StoredJson } from "../../worker/objects/stored-json.ts";
import { questionFacts } from "../../worker/rules/webhooks.ts";
import { storedObject } from "../../worker/rules/stored-text.ts";

const OBJECTS = join(import.meta.dirname, "../../worker/objects");

/** The files allowed to call JSON.parse, and why. */
const PARSERS: Record<string, string> = {
  "stored-json.ts": "the codec itself",
  "http.ts": "request bodies, not stored rows (readJsonBody: 400 bad_json on malformed input)",
};

const RULES = join(import.meta.dirname, "../../worker/rules");

/** Every .ts file under `dir`, by its path from `dir`. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
}

describe("stored JSON", () => {
  it("no file in worker/rules but stored-text.ts calls JSON.parse: a rule reading a row's text never throws on a corrupt one", () => {
    const bare = tsFiles(RULES).filter((f) => f !== "stored-text.ts")
      .flatMap((f) => readFileSync(join(RULES, f), "utf8").split("\n").flatMap((line, i) => (/JSON\s*\.\s*parse\b/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])));
    expect(bare).toEqual([]);
  });

  it("a rule reads a corrupt stored question as none asked and a corrupt cancel record as unknown, without throwing", () => {
    expect(questionFacts({ question: "{not json", on_deadline: "escalate" })).toEqual({ text: null, choices: [], on_deadline: "escalate" });
    expect(storedObject("[1]")).toBeNull();
    expect(storedObject<{ n: number }>('{"n":1}')).toEqual({ n: 1 });
  });

  it("no file in worker/objects but the codec (and the request body reader) calls JSON.parse", () => {
    const bare = readdirSync(OBJECTS).filter((f) => f.endsWith(".ts") && !(f in PARSERS))
      .flatMap((f) => readFileSync(join(OBJECTS, f), "utf8").split("\n").flatMap((line, i) => (/JSON\s*\.\s*parse\b/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])));
    expect(bare).toEqual([]);
  });

  it("a codec reads back what it wrote, and names what is wrong with text that is not JSON or not of its shape, without throwing", () => {
    const codec = new StoredJson<{ n: number }>("t.c", z.object({ n: z.number() }));
    expect(codec.read(codec.write({ n: 1 }))).toEqual({ ok: true, value: { n: 1 } });
    expect(codec.read("{n:")).toEqual({ ok: false, problem: 't.c holds text that is not JSON: "{n:"' });
    const misshapen = codec.read('{"n":"1"}');
    expect(misshapen.ok).toBe(false);
    expect(!misshapen.ok && misshapen.problem).toMatch(/^t\.c holds JSON of the wrong shape at n: /);
  });

  it("a value the shape accepts keeps fields the shape does not name (a newer writer's)", () => {
    const codec = new StoredJson<{ n: number }>("t.c", z.object({ n: z.number() }));
    expect(codec.read('{"n":1,"later":true}')).toEqual({ ok: true, value: { n: 1, later: true } });
  });
});
