import type { CkanClient } from "../ckan/client.ts";
import { sortColumns } from "../query/sort.ts";
import { BadParameter } from "../errors.ts";
import { ColumnRefusal, SortRefused } from "../ckan/refusals.ts";
import type { TableQuery } from "../query/table-query.ts";
import { tableInfo } from "./table-info.ts";

/**
 * When CKAN refuses a column (fields, sort or a filter naming one it does not know), the 400 names
 * the unknown columns and lists the table's own, so the caller can fix the link without the README;
 * a sort CKAN could not run names each sorted column's type.
 * Any other error, or a failure finding the columns, passes through unchanged.
 */
export async function withColumnHint(
  error: unknown,
  query: TableQuery & { alias: string | undefined },
  client: CkanClient,
): Promise<never> {
  if (!(error instanceof ColumnRefusal)) throw error;
  let hint: string | undefined;
  try {
    const named = [
      ...(query.fields ?? []),
      ...Object.keys(query.filters),
      ...(query.sort === undefined ? [] : sortColumns(query.sort)),
    ];
    const { columns } = await tableInfo(client, query.resourceId);
    const known = new Set(["_id", "_full_text", ...columns.map((c) => c.id)]);
    const unknown = [...new Set(named.filter((name) => !known.has(name)))];
    const list = (names: string[]): string => names.map((n) => `"${n.slice(0, 63)}"`).join(", ");
    if (unknown.length > 0) {
      const table = query.alias ?? query.resourceId;
      hint = `${table} has no column ${list(unknown)}. Its columns are: ${columns.map((c) => c.id).join(", ")}.`;
    } else if (error instanceof SortRefused) {
      const typed = error.columns.map(
        (id) => `"${id.slice(0, 63)}" (${columns.find((c) => c.id === id)?.type ?? "its own type"})`,
      );
      hint = `CKAN could not sort by ${typed.join(", ")}: PostgreSQL has no order for a column of that type. Sort by another column.`;
    }
  } catch {
    hint = undefined;
  }
  if (hint === undefined) throw error;
  throw new BadParameter(error.parameter, hint, { cause: error });
}
