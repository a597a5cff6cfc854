import type { OutputColumn } from "./plan.ts";
import type { Table, Value } from "./schema.ts";

/** One page row: a generated row index plus the rank values its text searches earned. */
export interface PageRow {
  readonly index: number;
  readonly ranks: readonly number[];
}

/** The row's values for the requested columns, in `fields` order. */
export function project(table: Table, output: readonly OutputColumn[], row: PageRow): Value[] {
  return output.map(({ source }) =>
    source.kind === "column" ? table.cell(source.column, row.index) : (row.ranks[source.rank] ?? null),
  );
}
