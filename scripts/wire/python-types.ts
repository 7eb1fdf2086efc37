// The wire as Python types (python/baton/_wire_types.py), from the same JSON Schema as
// wire-schema.json: one TypedDict per frame and result, one Literal per enum, the frame type
// names, and LIMITS. `npm run wire-schema` writes it; test/unit/wire-schema.test.ts fails on drift.
import { wireJsonSchema } from "./json-schema.ts";

export const WIRE_TYPES_PATH = "python/baton/_wire_types.py";

type Schema = Record<string, unknown> & {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
};

const pascal = (text: string) => text.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");

/** Names for enums whose field name alone says too little. */
const ALIASES: Record<string, string> = {
  ErrorServerFrameCode: "ErrorCode",
  MessageServerFrameStepsItemKind: "JournalKind",
  RevokedServerFrameReason: "RevokeReason",
  FailResultStatus: "FailStatus",
};

/** Frames only the dashboard reads: their type names are listed, their shapes are not generated. */
const DASHBOARD_FRAMES = new Set(["directory", "presence", "agent_gone"]);

class Writer {
  readonly classes: string[] = [];
  readonly literals = new Map<string, string>(); // alias name -> Literal[...] text
  private readonly classNames = new Set<string>();

  literal(field: string, qualified: string, values: unknown[]): string {
    const text = `Literal[${values.map(pythonValue).join(", ")}]`;
    for (const name of [ALIASES[qualified] ?? pascal(field), qualified]) {
      const known = this.literals.get(name);
      if (known === undefined) this.literals.set(name, text);
      if (known === undefined || known === text) return name;
    }
    throw new Error(`two enums named ${qualified}`);
  }

  type(schema: Schema, name: string, field: string): string {
    if (schema.const !== undefined) return `Literal[${pythonValue(schema.const)}]`;
    if (schema.enum) return this.literal(field, name, schema.enum);
    const union = schema.anyOf ?? schema.oneOf;
    if (union) return [...new Set(union.map((s, i) => this.type(s, i === 0 ? name : `${name}${i}`, field)))].join(" | ");
    const kinds = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
    if (kinds.length === 0) return "Any";
    return kinds.map((kind) => this.kind(kind, schema, name, field)).join(" | ");
  }

  private kind(kind: string, schema: Schema, name: string, field: string): string {
    switch (kind) {
      case "string": return "str";
      case "integer": return "int";
      case "number": return "float";
      case "boolean": return "bool";
      case "null": return "None";
      case "array": return `list[${schema.items ? this.type(schema.items, `${name}Item`, field) : "Any"}]`;
      case "object":
        if (schema.properties) return this.typedDict(schema, name);
        return typeof schema.additionalProperties === "object" ? `dict[str, ${this.type(schema.additionalProperties, name, field)}]` : "dict[str, Any]";
      default: return "Any";
    }
  }

  typedDict(schema: Schema, name: string): string {
    if (this.classNames.has(name)) throw new Error(`two types named ${name}`);
    this.classNames.add(name);
    const required = new Set(schema.required ?? []);
    const lines = Object.entries(schema.properties ?? {}).map(([key, prop]) => {
      const type = this.type(prop, name + pascal(key), key);
      return `    ${key}: ${required.has(key) ? `Required[${type}]` : `NotRequired[${type}]`}`;
    });
    this.classes.push(`class ${name}(TypedDict, total=False):\n${lines.join("\n") || "    pass"}\n`);
    return name;
  }
}

function variants(schema: Schema): Schema[] {
  return (schema.oneOf ?? []).flatMap((v) => (v.oneOf ? variants(v) : [v]));
}

function constOf(schema: Schema, key: string): string {
  const value = schema.properties?.[key]?.const;
  if (typeof value !== "string") throw new Error(`a frame without a constant ${key}`);
  return value;
}

function frameName(variant: Schema, side: "Client" | "Server"): string {
  const type = constOf(variant, "type");
  if (type === "result") return `${pascal(constOf(variant, "op"))}Result`;
  return side === "Client" ? `${pascal(type)}Frame` : `${pascal(type)}ServerFrame`;
}

export function wirePythonTypesText(): string {
  const wire = wireJsonSchema() as { client_frame: Schema; server_frame: Schema; output_event: Schema; limits: Record<string, unknown>; enums: Record<string, string[]>; routes: Record<string, string> };
  const writer = new Writer();
  const clients = variants(wire.client_frame).map((v) => writer.typedDict(v, frameName(v, "Client")));
  const servers = variants(wire.server_frame).filter((v) => !DASHBOARD_FRAMES.has(constOf(v, "type"))).map((v) => writer.typedDict(v, frameName(v, "Server")));
  const outputs = variants(wire.output_event).map((v) => writer.typedDict(v, `${pascal(constOf(v, "type"))}OutputEvent`));
  const typesOf = (schema: Schema) => [...new Set(variants(schema).map((v) => constOf(v, "type")))].map((t) => JSON.stringify(t));
  const ops = variants(wire.server_frame).filter((v) => constOf(v, "type") === "result").map((v) => JSON.stringify(constOf(v, "op")));
  const literals = [...writer.literals].map(([name, text]) => `${name} = ${text}`);
  return [
    `"""The wire's types, generated from worker/wire by \`npm run wire-schema\` (scripts/wire/python-types.ts); do not edit.`,
    "",
    "One TypedDict per client frame (``StepFrame``), server frame (``MessageServerFrame``) and result",
    "(``StepResult``), one Literal per enum, and LIMITS (worker/wire/protocol.ts). A unit test fails when",
    `this file and the wire drift apart."""`,
    "",
    "from __future__ import annotations",
    "",
    "from types import MappingProxyType",
    "from typing import Any, Final, Literal, Mapping, NotRequired, Required, TypedDict, Union",
    "",
    `ClientFrameType = Literal[${typesOf(wire.client_frame).join(", ")}]`,
    `ServerFrameType = Literal[${typesOf(wire.server_frame).join(", ")}]`,
    `ResultOp = Literal[${ops.join(", ")}]`,
    ...literals,
    "",
    "",
    writer.classes.join("\n\n"),
    "",
    `ClientFrame = Union[${clients.join(", ")}]`,
    `ServerFrame = Union[${servers.join(", ")}]`,
    `OutputEvent = Union[${outputs.join(", ")}]`,
    "",
    "#: The wire's named enums (worker/wire/enums.ts), each value once.",
    ...Object.entries(wire.enums).map(([name, values]) => `${name.toUpperCase()}: Final[tuple[str, ...]] = (${values.map((v) => JSON.stringify(v)).join(", ")},)`),
    "",
    "#: Every path of the coordinator's route table (worker/wire/routes.ts), {name} for a parameter.",
    `ROUTE_PATHS: Final[frozenset[str]] = frozenset({${[...new Set(Object.keys(wire.routes).map((k) => k.split(" ")[1]))].map((p) => JSON.stringify(p)).join(", ")}})`,
    "",
    "#: LIMITS of worker/wire/protocol.ts: sizes (bytes of UTF-8 JSON or text), counts, and {min, max} ranges. Read-only.",
    `LIMITS: Final[Mapping[str, Any]] = MappingProxyType({`,
    ...Object.entries(wire.limits).map(([key, value]) => `    ${JSON.stringify(key)}: ${pythonValue(value)},`),
    "})",
    "",
  ].join("\n");
}

function pythonValue(value: unknown): string {
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pythonValue(v)}`);
    return `MappingProxyType({${entries.join(", ")}})`;
  }
  if (typeof value === "boolean") return value ? "True" : "False";
  return JSON.stringify(value);
}
