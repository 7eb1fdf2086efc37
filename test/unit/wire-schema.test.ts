// One wire, two languages: the JSON Schema the Python client checks frames against, and the Python
// types it is written with, are generated from the TypeScript schemas, and this fails when a
// committed copy drifts from them.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { WIRE_SCHEMA_PATH, wireJsonSchemaText } from "../../scripts/wire/json-schema.ts";
import { WIRE_TYPES_PATH, wirePythonTypesText } from "../../scripts/wire/python-types.ts";

describe("python/baton/wire-schema.json", () => {
  it("is exactly what worker/wire's schemas generate (run `npm run wire-schema` after changing the wire)", () => {
    expect(readFileSync(WIRE_SCHEMA_PATH, "utf8")).toBe(wireJsonSchemaText());
  });
});

describe("python/baton/_wire_types.py", () => {
  it("is exactly what worker/wire's schemas generate (run `npm run wire-schema` after changing the wire)", () => {
    expect(readFileSync(WIRE_TYPES_PATH, "utf8")).toBe(wirePythonTypesText());
  });
});

describe("python/baton/_wire_types.py's literals", () => {
  it("are Python: a boolean is True or False (JSON's true is a NameError for typing.get_type_hints)", () => {
    const literals = wirePythonTypesText().match(/Literal\[[^\]]*\]/g) ?? [];
    expect(literals).toContain("Literal[True]");
    expect(literals.filter((l) => /\b(true|false|null)\b/.test(l.replace(/"[^"]*"/g, "")))).toEqual([]);
  });
});
