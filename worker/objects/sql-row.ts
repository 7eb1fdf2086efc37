// One description of a stored row: each column's kind, from which the row's type is inferred and
// by which every row read from SQLite is checked, column by column, and every write is checked
// before it is bound. A value of the wrong kind fails here with the table and column it is in,
// never later as a wrong answer. The tables' DDL lives in their numbered migrations (migrations.ts).

export interface Column<T extends SqlStorageValue> {
  /** SQLite's declared type and whether NULL is allowed, as PRAGMA table_info reports them. */
  readonly type: "INTEGER" | "TEXT";
  readonly nullable: boolean;
  /** What the column holds, for error messages. */
  readonly kind: string;
  readonly is: (value: SqlStorageValue) => value is T;
}

const isNumber = (v: SqlStorageValue): v is number => typeof v === "number";
const isString = (v: SqlStorageValue): v is string => typeof v === "string";

export const integer = (): Column<number> => ({ type: "INTEGER", nullable: false, kind: "an integer", is: isNumber });
export const text = (): Column<string> => ({ type: "TEXT", nullable: false, kind: "text", is: isString });
export const maybeInteger = (): Column<number | null> => ({ type: "INTEGER", nullable: true, kind: "an integer or NULL", is: (v): v is number | null => v === null || isNumber(v) });
export const maybeText = (): Column<string | null> => ({ type: "TEXT", nullable: true, kind: "text or NULL", is: (v): v is string | null => v === null || isString(v) });

/** Text holding one of `values` (a closed set: every member is named once, as a record's keys). */
/** A text column holding one of `values` (the wire's enum, worker/wire/enums.ts). */
export function oneOf<T extends string>(values: readonly T[]): Column<T> {
  const known = new Set<string>(values);
  return { type: "TEXT", nullable: false, kind: `one of ${[...known].join(", ")}`, is: (v): v is T => typeof v === "string" && known.has(v) };
}

export function maybeOneOf<T extends string>(values: readonly T[]): Column<T | null> {
  const member = oneOf(values);
  return { type: "TEXT", nullable: true, kind: `${member.kind} or NULL`, is: (v): v is T | null => v === null || member.is(v) };
}

export type RowSchema<Row> = { readonly [K in keyof Row]: Row[K] extends SqlStorageValue ? Column<Row[K]> : never };
export type RowOf<S> = { -readonly [K in keyof S]: S[K] extends Column<infer T> ? T : never };

/** Reads and writes the rows of one table as typed objects. */
export class RowCodec<Row extends Record<string, SqlStorageValue>> {
  readonly columns: readonly (keyof Row & string)[];
  private readonly byName: ReadonlyMap<string, Column<SqlStorageValue>>;
  private readonly lookedUp = new WeakMap<readonly string[], readonly Column<SqlStorageValue>[]>();

  constructor(readonly table: string, readonly schema: RowSchema<Row>) {
    const entries: [keyof Row & string, Column<SqlStorageValue>][] = Object.entries(schema);
    this.columns = entries.map(([name]) => name);
    this.byName = new Map(entries);
  }

  /** Each column's name, declared type and nullability (to compare with what the migrations made). */
  describe(): { name: string; type: Column<SqlStorageValue>["type"]; nullable: boolean }[] {
    return [...this.byName].map(([name, c]) => ({ name, type: c.type, nullable: c.nullable }));
  }

  /** The select list of `fields` ("a, b, c"). */
  list(fields: readonly (keyof Row & string)[]): string {
    return fields.join(", ");
  }

  /** A whole row (SELECT * or RETURNING *). */
  decode(raw: Record<string, SqlStorageValue>): Pick<Row, keyof Row & string> {
    return this.pick(raw, this.columns);
  }

  /** A row holding (at least) the named columns, each checked against its column; the row itself, typed. */
  pick<K extends keyof Row & string>(raw: Record<string, SqlStorageValue>, fields: readonly K[]): Pick<Row, K> {
    this.check(raw, fields);
    return raw;
  }

  /** The columns of a field list, looked up once per list (the lists are constants). */
  private columnsOf(fields: readonly string[]): readonly Column<SqlStorageValue>[] {
    let columns = this.lookedUp.get(fields);
    if (columns === undefined) {
      columns = fields.map((f) => {
        const column = this.byName.get(f);
        if (column === undefined) throw new Error(`${this.table} has no column ${f}`);
        return column;
      });
      this.lookedUp.set(fields, columns);
    }
    return columns;
  }

  private check<K extends keyof Row & string>(raw: Record<string, SqlStorageValue>, fields: readonly K[]): asserts raw is Record<string, SqlStorageValue> & Pick<Row, K> {
    const columns = this.columnsOf(fields);
    for (let i = 0; i < fields.length; i++) {
      const value = raw[fields[i]!];
      if (value === undefined || !columns[i]!.is(value)) throw new Error(`${this.table}.${fields[i]} holds ${describe(value)}, not ${columns[i]!.kind}`);
    }
  }

  /** `SET a = ?, b = ?` and its bindings for the given fields, each checked against its column. */
  assignments(fields: Partial<Row>): { set: string; values: SqlStorageValue[] } {
    const names: string[] = [];
    const values: SqlStorageValue[] = [];
    for (const [name, value] of Object.entries(fields)) {
      if (value === undefined) continue;
      const column = this.byName.get(name);
      if (column === undefined) throw new Error(`${this.table} has no column ${name}`);
      if (!column.is(value)) throw new Error(`${this.table}.${name} cannot hold ${describe(value)}, only ${column.kind}`);
      names.push(`${name} = ?`);
      values.push(value);
    }
    return { set: names.join(", "), values };
  }
}

function describe(value: SqlStorageValue | undefined): string {
  if (value === undefined) return "nothing (no such column in the result)";
  if (value instanceof ArrayBuffer) return `a ${value.byteLength}-byte blob`;
  return JSON.stringify(value).slice(0, 80);
}
