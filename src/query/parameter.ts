import { BadParameter, clip } from "../errors.ts";
import type { RowLimit } from "./row-limit.ts";

/**
 * How a link parameter is declared, once: what it means (README, OpenAPI, the page's reference),
 * which formats take it, and how its value is read and checked. The table is query/params.ts; the
 * builders below give the common kinds (text, choice, flag, count) their schema and their checks
 * from the same fields, so what is documented is what is enforced.
 */
export interface Parameter<T = unknown> {
  /** As written in a link; `<field>` marks a name the user completes. */
  name: string;
  /** One sentence or two, Markdown: what it does and what is refused. */
  meaning: string;
  /** A path and query using the `sample` alias. */
  example: string;
  schema: ParameterSchema;
  /** May be given more than once (values accumulate). */
  repeatable?: boolean;
  /** The name is a pattern (`filter.<field>`, `_anything`), not a literal parameter. */
  pattern?: boolean;
  /** Read by the signed-link check, not by the query parser. */
  link?: boolean;
  /** The formats whose links take it; absent: every format. */
  formats?: readonly string[];
  /** Taken by one kind of link only: `/export.<format>` or `/aggregate.<format>`. */
  only?: LinkKind;
  /** What it means on an aggregate link, where that differs (sort, limit, offset). */
  aggregateMeaning?: string;
  /** Its value from the link (`raw`: its one value, undefined when absent), checked; a 400 naming it otherwise. */
  read?: (raw: string | undefined, context: ParseContext) => T;
}

export type LinkKind = "export" | "aggregate";

export interface ParameterSchema {
  type: "string" | "integer" | "boolean";
  enum?: readonly string[];
  minimum?: number;
  maxLength?: number;
  default?: string | number | boolean;
}

/** What a parameter's check may consult beyond its own value. */
export interface ParseContext {
  /** The route's format (`csv`, `xlsx`...): a value some formats cannot take is refused for it. */
  format: string;
  /** The whole query string, for a parameter read from several names (`filter.<field>`). */
  params: URLSearchParams;
  /** The most rows one export may hold: `limit`'s maximum. */
  rowLimit: RowLimit;
}

type Doc = Pick<Parameter, "name" | "meaning" | "example" | "formats" | "only" | "aggregateMeaning">;

/** A parameter whose value needs nothing but itself to be checked. */
export type PlainParameter<T> = Parameter<T> & { read: (raw: string | undefined) => T };

/** The one value of a parameter that may be given once. */
export function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1)
    throw new BadParameter(name, `Parameter ${name} is given ${values.length} times; give it once.`);
  return values[0];
}

/** Free text, at most `maxLength` characters; blank reads as absent when `blankIsAbsent` says so. */
export function text(doc: Doc & { maxLength?: number; blankIsAbsent?: boolean }): PlainParameter<string | undefined> {
  const { maxLength, blankIsAbsent, ...rest } = doc;
  return {
    ...rest,
    schema: { type: "string", ...(maxLength === undefined ? {} : { maxLength }) },
    read: (raw) => {
      if (raw !== undefined && maxLength !== undefined && raw.length > maxLength) {
        throw new BadParameter(
          doc.name,
          `Parameter ${doc.name} is ${raw.length} characters long; the most this worker accepts is ${maxLength}.`,
        );
      }
      return blankIsAbsent && raw?.trim() === "" ? undefined : raw;
    },
  };
}

/** One of `values`; `said` is how a refusal lists them when not simply "a, b or c". */
export function choice<V extends string, D extends V | undefined = undefined>(
  doc: Doc & { values: readonly V[]; default?: D; said?: string },
): PlainParameter<D extends V ? V : V | undefined> {
  const { values, said, default: fallback, ...rest } = doc;
  const listed = said ?? (values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(" ")}`);
  return {
    ...rest,
    schema: { type: "string", enum: values, ...(fallback === undefined ? {} : { default: fallback }) },
    read: (raw) => {
      if (raw === undefined) return fallback as D extends V ? V : V | undefined;
      if (!(values as readonly string[]).includes(raw))
        throw new BadParameter(doc.name, `Parameter ${doc.name} must be ${listed} (got "${clip(raw)}").`);
      return raw as V;
    },
  };
}

/** `1`/`true` or `0`/`false`. */
export function flag(doc: Doc & { default: boolean }): PlainParameter<boolean> {
  const { default: fallback, ...rest } = doc;
  return {
    ...rest,
    schema: { type: "string", enum: ["1", "0", "true", "false"], default: fallback ? "1" : "0" },
    read: (raw) => readFlag(doc.name, raw, fallback),
  };
}

export function readFlag(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  if (raw === "1" || raw === "true") return true;
  if (raw === "0" || raw === "false") return false;
  throw new BadParameter(name, `Parameter ${name} must be 1 or 0 (got "${clip(raw)}").`);
}

/** A whole number, 0 or more, up to `max` (however many digits it is given with): above it, `above` says whose maximum it passes. */
export function count<D extends number | undefined = undefined>(
  doc: Doc & {
    default?: D;
    max: (context: ParseContext) => number;
    above: (given: string, max: number, context: ParseContext) => string;
  },
): Parameter<D extends number ? number : number | undefined> & {
  read: (raw: string | undefined, context: ParseContext) => D extends number ? number : number | undefined;
} {
  const { default: fallback, max, above, ...rest } = doc;
  type T = D extends number ? number : number | undefined;
  return {
    ...rest,
    schema: { type: "integer", minimum: 0, ...(fallback === undefined ? {} : { default: fallback }) },
    read: (raw, context) => {
      if (raw === undefined) return fallback as T;
      const digits = raw.trim();
      if (!/^\d+$/.test(digits))
        throw new BadParameter(
          doc.name,
          `Parameter ${doc.name} must be a whole number, 0 or more (got "${clip(raw)}").`,
        );
      const n = Number(digits);
      const most = max(context);
      if (n > most) throw new BadParameter(doc.name, above(clip(digits.replace(/^0+(?=\d)/, ""), 40), most, context));
      return n as T;
    },
  };
}

/** The values of a set of parameters, keyed as the set is. */
export type Values<S extends Record<string, Parameter>> = {
  [K in keyof S]: S[K] extends Parameter<infer T> ? T : never;
};

/** Reads and checks every parameter of `set` from the link, in the set's order: the first fault is the 400. */
export function readParameters<S extends Record<string, Parameter>>(set: S, context: ParseContext): Values<S> {
  const values: Record<string, unknown> = {};
  for (const [key, parameter] of Object.entries(set)) {
    if (parameter.read === undefined || !appliesTo(parameter, context.format)) continue;
    values[key] = parameter.read(parameter.pattern ? undefined : single(context.params, parameter.name), context);
  }
  return values as Values<S>;
}

export const appliesTo = (parameter: Parameter, format: string): boolean =>
  parameter.formats === undefined || parameter.formats.includes(format);

/**
 * Refuses a name the link may not carry for this format: one some other format takes says which,
 * one within two edits of a known name suggests it (`limt`: did you mean limit?), linking its docs.
 * `filter.<field>` and `_`-prefixed names are read apart.
 */
export function checkNames(params: URLSearchParams, table: readonly Parameter[], format: string): void {
  const literal = table.filter((p) => !p.pattern);
  const known = new Set(literal.filter((p) => appliesTo(p, format)).map((p) => p.name));
  const unknown = [...new Set(params.keys())].filter(
    (name) => !name.startsWith("_") && !name.startsWith("filter.") && !known.has(name),
  );
  if (unknown.length === 0) return;
  const elsewhere = unknown.find((name) => literal.some((p) => p.name === name));
  if (elsewhere !== undefined) {
    const others = unknown.filter((name) => literal.some((p) => p.name === name));
    const formats = literal.find((p) => p.name === elsewhere)?.formats ?? [];
    throw new BadParameter(
      elsewhere,
      `Parameter ${others.join(", ")} does not apply to ${format} exports (it is for ${formats.join(" and ")}).`,
    );
  }
  const first = unknown[0] as string;
  const names = [...known].filter((name) => !table.find((p) => p.name === name)?.link);
  const suggestion = closest(first, [...known]);
  throw new BadParameter(
    first,
    `Unknown parameter${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}.${suggestion === undefined ? "" : ` Did you mean ${suggestion}?`} Known parameters: ${names.join(", ")}, filter.<field>.`,
    suggestion === undefined ? {} : { documented: suggestion },
  );
}

/** The known name within two edits of `name` (fewer for short names: `q` suggests nothing), nearest first. */
function closest(name: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate);
    if (distance > Math.min(2, Math.floor(candidate.length / 2))) continue;
    if (best === undefined || distance < best.distance) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Levenshtein's distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
