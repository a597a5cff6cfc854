import { pyStr } from "./py-json.ts";

// CKAN's navl validators for scalar parameters, kept apart so their Python quirks stay in one place.

/** int_validator: whole numbers, numeric strings, booleans; undefined when invalid. */
export function toInteger(value: unknown): number | undefined {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") return Number.isInteger(value) ? value : undefined;
  if (typeof value === "string" && /^\s*[+-]?\d+\s*$/.test(value)) return Number.parseInt(value, 10);
  return undefined;
}

/** boolean_validator: never fails; only a few spellings of "yes" count as true. */
export function toBoolean(value: unknown): boolean {
  if (typeof value === "boolean") return value;
  if (typeof value === "string") return ["true", "yes", "t", "y", "1"].includes(value.toLowerCase());
  return Boolean(value);
}

/** Python's str() of a JSON value, for the few validators that stringify whatever they get. */
export function pythonStr(value: unknown): string {
  return pyStr(value);
}

/** datastore_helpers.get_list: a comma string or a list, values stripped of spaces and quotes. */
export function getList(value: string | readonly string[], stripQuotes: boolean): string[] {
  const list = typeof value === "string" ? value.split(",").map((part) => part.trim()) : [...value];
  if (!stripQuotes) return list;
  return list.map((item) =>
    item.length > 0 && item[0] === item[item.length - 1] ? item.trim().replace(/^"+|"+$/g, "") : item,
  );
}
