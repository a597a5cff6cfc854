import { HttpError } from "../errors.ts";
import type { Row } from "../rows/types.ts";
import type { Accumulator } from "./measures.ts";
import type { AggregatePlan } from "./plan.ts";
import { detached, isNull } from "./values.ts";

// The groups of an aggregate as pages arrive: one entry per distinct group key, its output cells and
// one accumulator per measure. Memory grows with the groups, never with the rows; past MAX_GROUPS the
// aggregate stops with a 400.

interface Group {
  cells: string[];
  accumulators: Accumulator[];
}

const NULL_KEY = "\u0002";

/** Groups by their first key, then their second, ...: no key is built by joining a row's parts. */
type Level = Map<string, Level | Group>;

export class GroupTable {
  private readonly root: Level = new Map();
  private readonly groups: Group[] = [];
  rows = 0;
  private readonly plan: AggregatePlan;
  private readonly maxGroups: number;

  constructor(plan: AggregatePlan, maxGroups: number) {
    this.plan = plan;
    this.maxGroups = maxGroups;
  }

  /** Folds one row (its cells are read, never kept: a caller may reuse the array). */
  addRow(row: Row): void {
    const { groups: planned, measures } = this.plan;
    const last = planned.length - 1;
    let level = this.root;
    let group: Group | undefined;
    if (last < 0) {
      group = level.get("") as Group | undefined;
      if (group === undefined) group = this.open(level, "", row);
    } else {
      for (let g = 0; g < last; g++) {
        const cell = row[planned[g]!.index];
        const key = isNull(cell) ? NULL_KEY : planned[g]!.key(cell);
        let next = level.get(key) as Level | undefined;
        if (next === undefined) {
          next = new Map();
          level.set(detached(key), next);
        }
        level = next;
      }
      const cell = row[planned[last]!.index];
      const key = isNull(cell) ? NULL_KEY : planned[last]!.key(cell);
      group = level.get(key) as Group | undefined;
      if (group === undefined) group = this.open(level, key, row);
    }
    const accumulators = group.accumulators;
    for (let m = 0; m < measures.length; m++) {
      const index = measures[m]!.index;
      accumulators[m]!.add(index === undefined ? undefined : row[index]);
    }
    this.rows++;
  }

  /** Folds a page of rows, then lets go of it. */
  addRows(rows: Row[]): void {
    for (const row of rows) this.addRow(row);
    this.endPage();
  }

  /** After a page: no group or extreme keeps a cell that holds the page's text alive. */
  endPage(): void {
    if (this.settling)
      for (const group of this.groups) for (const accumulator of group.accumulators) accumulator.settle?.();
  }

  /** Whether a measure keeps a cell of the page (min, max). */
  private get settling(): boolean {
    return this.plan.measures.some((m) => m.measure.fn === "min" || m.measure.fn === "max");
  }

  private open(level: Level, key: string, row: Row): Group {
    if (this.groups.length >= this.maxGroups) {
      throw new HttpError(
        400,
        `This aggregate has more than ${this.maxGroups} groups, the most this worker keeps (MAX_GROUPS). Group by fewer or coarser columns (month instead of day), or narrow with filters or q.`,
        { parameter: "group_by", setting: "MAX_GROUPS" },
      );
    }
    const group: Group = {
      cells: this.plan.groups.map((g) => {
        const cell = row[g.index];
        return isNull(cell) ? "null" : detached(g.value(cell));
      }),
      accumulators: this.plan.measures.map((m) => m.make()),
    };
    level.set(detached(key), group);
    this.groups.push(group);
    return group;
  }

  /** The result rows, one per group (with no group columns: one row of totals, even over no rows). */
  results(): Row[] {
    if (this.plan.groups.length === 0 && this.groups.length === 0) {
      return [this.plan.measures.map((m) => m.make().result())];
    }
    return this.groups.map((g) => [...g.cells, ...g.accumulators.map((a) => a.result())]);
  }

  get size(): number {
    return this.groups.length;
  }
}
