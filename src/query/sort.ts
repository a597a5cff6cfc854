import { badRequest, clip } from "../errors.ts";

const SORT_PART = /^\s*("(?:[^"]|"")+"|[^\s",]+)(?:\s+(asc|desc))?\s*$/i;

/** The column names a CKAN sort string orders by, or a 400 when it is not CKAN's syntax. */
export function sortColumns(sort: string): string[] {
  return sort.split(",").map((part) => {
    const match = SORT_PART.exec(part);
    if (!match) {
      throw badRequest("sort", `Parameter sort must look like "year desc, name" (got "${clip(sort)}").`);
    }
    const name = match[1] as string;
    return name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name;
  });
}
