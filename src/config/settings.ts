import { configError } from "../errors.ts";

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A structured setting arrives as a TOML table from wrangler.toml (an object here) or as a JSON
 * string from `wrangler dev --var` or the dashboard; both mean the same.
 */
export function structuredSetting(setting: string, value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    throw configError(setting, "is not valid JSON");
  }
}

export function integerSetting(setting: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined || value === "") return fallback;
  const text = String(value).trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw configError(setting, `must be a whole number from ${min} to ${max}`);
  }
  return n;
}
