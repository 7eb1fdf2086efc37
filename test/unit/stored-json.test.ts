// Stored JSON is read through its codec (worker/rules/stored-json.ts), and only there: a bare
// JSON.parse anywhere else in worker/objects or worker/rules fails this test. What the codec answers for good,
// malformed and misshapen text; what each store does with a corrupt row is test/worker/stored-json.test.ts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { StoredJson } from "../../worker/rules/stored-json.ts";
import { questionFacts } from "../../worker/rules/webhooks.ts";
import { cancelJson, questionJson } from "../../worker/rules/message-json.ts";
import { messageEvent } from "../../worker/rules/webhooks.ts";

const OBJECTS = join(import.meta.dirname, "../../worker/objects");

/** The files allowed to call JSON.parse, and why. */
const PARSERS: Record<string, string> = {
  "http.ts": "request bodies, not stored rows (readJsonBody: 400 bad_json on malformed input)",
};

const RULES = join(import.meta.dirname, "../../worker/rules");

/** Every .ts file under `dir`, by its path from `dir`. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
}

describe("stored JSON", () => {
  it("no file in worker/rules but the codec calls JSON.parse: a rule reading a row's text never throws on a corrupt one", () => {
    const bare = tsFiles(RULES).filter((f) => f !== "stored-json.ts")
      .flatMap((f) => readFileSync(join(RULES, f), "utf8").split("\n").flatMap((line, i) => (/JSON\s*\.\s*parse\b/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])));
    expect(bare).toEqual([]);
  });

  it("a rule reads a corrupt stored question as none asked and a corrupt cancel record as unknown, without throwing", () => {
    expect(questionFacts({ question: "{not json", on_deadline: "escalate" })).toEqual({ text: null, choices: [], on_deadline: "escalate" });
    expect(questionFacts({ question: '{"text":1}', on_deadline: null })).toEqual({ text: null, choices: [], on_deadline: "fail" });
    expect(questionJson.valueOr("[1]", null)).toBeNull();
    expect(cancelJson.valueOr("{not json", null)).toBeNull();
    const facts = { id: 1, status: "cancelled", text: "t", attempts: 1, expires_at: null, pending_ask: null, error: null, question: null, on_deadline: null } as const;
    const cancelled = messageEvent("message.cancelled", "running", { ...facts, cancel: '{"token":7}' });
    expect(cancelled.type === "message.cancelled" && cancelled.message).toMatchObject({ by: "unknown", via: "unknown", reason: null });
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
