import type { Row } from "../rows/types.ts";
import type { AggregatePlan } from "./plan.ts";
import type { OutputOrder } from "./spec.ts";
import { cellComparator, isNull } from "./values.ts";

/**
 * The order of an aggregate's rows: the link's `sort`, then the group columns ascending (the
 * default, and what breaks ties, so both ways of computing give the same order). As PostgreSQL
 * orders: nulls where the link says (`nulls last`), else last ascending and first descending; text
 * by code point (the "C" collation).
 */
export function outputOrder(plan: AggregatePlan, sort: OutputOrder[]): OutputOrder[] {
  const order = [...sort];
  for (const group of plan.groups) {
    if (!order.some((o) => o.name === group.item.name)) {
      order.push({ name: group.item.name, descending: false, nulls: "last" });
    }
  }
  return order;
}

export function sortRows(rows: Row[], plan: AggregatePlan, sort: OutputOrder[]): Row[] {
  const keys = outputOrder(plan, sort).map((o) => {
    const index = plan.columns.findIndex((c) => c.id === o.name);
    return { index, descending: o.descending, nulls: o.nulls, compare: cellComparator(plan.kinds[index]!, o.name) };
  });
  if (keys.length === 0) return rows;
  return rows.sort((a, b) => {
    for (const key of keys) {
      const x = a[key.index];
      const y = b[key.index];
      const xNull = isNull(x);
      const yNull = isNull(y);
      if (xNull || yNull) {
        // Nulls have their own place, whichever the direction.
        if (xNull !== yNull) return (xNull ? 1 : -1) * (key.nulls === "last" ? 1 : -1);
        continue;
      }
      const c = key.compare(x, y);
      if (c !== 0) return key.descending ? -c : c;
    }
    return 0;
  });
}
