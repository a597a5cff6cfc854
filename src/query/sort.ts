import { badRequest, clip } from "../errors.ts";

const SORT_PART = /^\s*("(?:[^"]|"")+"|[^\s",]+)(?:\s+(asc|desc))?(?:\s+nulls\s+(first|last))?\s*$/i;

/** One key of a sort as the link gave it: `amount desc nulls last`. */
export interface SortKey {
  /** The column name, unquoted. */
  column: string;
  /** The name as written (quoted or not), for CKAN's sort string. */
  written: string;
  desc: boolean;
  /** Where nulls go; PostgreSQL's own place (last ascending, first descending) when not said. */
  nulls: "first" | "last";
}

/** PostgreSQL's place for nulls: NULL sorts as larger than any value. */
const defaultNulls = (desc: boolean): "first" | "last" => (desc ? "first" : "last");

/**
 * A sort string in CKAN's syntax, each key optionally ending in `nulls first` or `nulls last`
 * (CKAN takes no such clause: the worker orders the first key's nulls itself, see
 * ckan/nulls-last.ts), or a 400 naming `sort`.
 */
export function parseSort(sort: string): SortKey[] {
  return sort.split(",").map((part, index) => {
    const match = SORT_PART.exec(part);
    if (!match) {
      throw badRequest(
        "sort",
        `Parameter sort must look like "year desc, name" or "amount desc nulls last" (got "${clip(sort)}").`,
      );
    }
    const written = match[1] as string;
    const desc = match[2]?.toLowerCase() === "desc";
    const nulls = (match[3]?.toLowerCase() as "first" | "last" | undefined) ?? defaultNulls(desc);
    if (index > 0 && nulls !== defaultNulls(desc)) {
      throw badRequest(
        "sort",
        `Parameter sort: "nulls ${nulls}" is only supported on the first sort key; after "${clip(written)}${desc ? " desc" : ""}" nulls come ${defaultNulls(desc)} (PostgreSQL's order).`,
      );
    }
    const column = written.startsWith('"') ? written.slice(1, -1).replaceAll('""', '"') : written;
    return { column, written, desc, nulls };
  });
}

/** The column names a sort string orders by, or a 400 when it is not CKAN's syntax. */
export function sortColumns(sort: string): string[] {
  return parseSort(sort).map((key) => key.column);
}

/** The sort as CKAN takes it: the nulls clauses dropped (CKAN refuses them; PostgreSQL's place stays). */
export function ckanSort(sort: string): string {
  return parseSort(sort)
    .map((key) => `${key.written}${key.desc ? " desc" : ""}`)
    .join(", ");
}

/** The first key when the link asks its nulls somewhere PostgreSQL does not put them. */
export function movedNulls(sort: string | undefined): SortKey | undefined {
  if (sort === undefined) return undefined;
  const first = parseSort(sort)[0];
  return first !== undefined && first.nulls !== defaultNulls(first.desc) ? first : undefined;
}
