// Stored JSON that a rule reads itself, from the rows its event carries (a question, a cancel
// record, a step's value). The stores read their rows through worker/objects/stored-json.ts, and
// a corrupt row never throws there; nor may it here, inside a plan or its apply, where a throw
// would leave the object's alarm and every later event failing on the same row.

/** The stored text's value, or undefined when it is not JSON (a corrupt row: JSON never parses to undefined). */
export function storedValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The stored text's value when it is a JSON object, else null (absent, corrupt, or not an object). */
export function storedObject<T extends object>(text: string | null | undefined): Partial<T> | null {
  if (text === null || text === undefined) return null;
  const value = storedValue(text);
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Partial<T>) : null;
}
