import { HttpError } from "../errors.ts";
import type { Row } from "../rows/types.ts";
import type { Accumulator } from "./measures.ts";
import type { AggregatePlan } from "./plan.ts";
import { isNull } from "./values.ts";

// The groups of an aggregate as pages arrive: one entry per distinct group key, its output cells and
// one accumulator per measure. Memory grows with the groups, never with the rows; past MAX_GROUPS the
// aggregate stops with a 400.

interface Group {
  cells: string[];
  accumulators: Accumulator[];
}

/** Joins a row's group keys: no JSON text holds this character raw (it is escaped in strings). */
const SEPARATOR = "\u0001";
const NULL_KEY = "\u0002";

export class GroupTable {
  private readonly groups = new Map<string, Group>();
  rows = 0;
  private readonly plan: AggregatePlan;
  private readonly maxGroups: number;

  constructor(plan: AggregatePlan, maxGroups: number) {
    this.plan = plan;
    this.maxGroups = maxGroups;
  }

  addRows(rows: Row[]): void {
    const { groups: planned, measures } = this.plan;
    const single = planned.length === 1 ? planned[0] : undefined;
    for (const row of rows) {
      let key = "";
      if (single !== undefined) {
        const cell = row[single.index];
        key = isNull(cell) ? NULL_KEY : single.key(cell);
      } else {
        for (let g = 0; g < planned.length; g++) {
          const cell = row[planned[g]!.index];
          key += (g === 0 ? "" : SEPARATOR) + (isNull(cell) ? NULL_KEY : planned[g]!.key(cell));
        }
      }
      let group = this.groups.get(key);
      if (group === undefined) group = this.open(key, row);
      const accumulators = group.accumulators;
      for (let m = 0; m < measures.length; m++) {
        const index = measures[m]!.index;
        accumulators[m]!.add(index === undefined ? undefined : row[index]);
      }
    }
    this.rows += rows.length;
  }

  private open(key: string, row: Row): Group {
    if (this.groups.size >= this.maxGroups) {
      throw new HttpError(
        400,
        `This aggregate has more than ${this.maxGroups} groups, the most this worker keeps (MAX_GROUPS). Group by fewer or coarser columns (month instead of day), or narrow with filters or q.`,
        { parameter: "group_by", setting: "MAX_GROUPS" },
      );
    }
    const group: Group = {
      cells: this.plan.groups.map((g) => {
        const cell = row[g.index];
        return isNull(cell) ? "null" : g.value(cell);
      }),
      accumulators: this.plan.measures.map((m) => m.make()),
    };
    this.groups.set(key, group);
    return group;
  }

  /** The result rows, one per group (with no group columns: one row of totals, even over no rows). */
  results(): Row[] {
    if (this.plan.groups.length === 0 && this.groups.size === 0) {
      return [this.plan.measures.map((m) => m.make().result())];
    }
    return [...this.groups.values()].map((g) => [...g.cells, ...g.accumulators.map((a) => a.result())]);
  }

  get size(): number {
    return this.groups.size;
  }
}
