import { HttpError } from "../errors.ts";
import type { Row } from "../rows/types.ts";
import { CsvRow } from "./csv-row.ts";
import { KeyIds } from "./keys.ts";
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

/** Groups by their first key's number, then their second's, ...: no key is built by joining a row's parts. */
type Level = Map<number, Level | Group>;

/** The 400 of an aggregate with more groups than MAX_GROUPS, however it is computed (and whatever its limit). */
export const tooManyGroups = (maxGroups: number): HttpError =>
  new HttpError(
    400,
    `This aggregate has more than ${maxGroups} groups, the most this worker keeps (MAX_GROUPS). Group by fewer or coarser columns (month instead of day), or narrow with filters or q.`,
    { parameter: "group_by", setting: "MAX_GROUPS" },
  );

export class GroupTable {
  private readonly root: Level = new Map();
  private readonly groups: Group[] = [];
  /** Each group column's key numbers. */
  private readonly ids: KeyIds[];
  rows = 0;
  private readonly plan: AggregatePlan;
  private readonly maxGroups: number;

  constructor(plan: AggregatePlan, maxGroups: number) {
    this.plan = plan;
    this.maxGroups = maxGroups;
    this.ids = plan.groups.map(() => new KeyIds());
  }

  /** Folds one row of CKAN's JSON text cells (read, never kept: a caller may reuse the array). */
  addRow(row: Row): void {
    const planned = this.plan.groups;
    let level = this.root;
    let key = 0;
    for (let g = 0; g < planned.length; g++) {
      if (g > 0) level = this.next(level, key);
      key = planned[g]!.keyer.ofCell(row[planned[g]!.index], this.ids[g]!);
    }
    const group = (level.get(key) as Group | undefined) ?? this.open(level, key, row);
    const { measures } = this.plan;
    for (let m = 0; m < measures.length; m++) {
      const index = measures[m]!.index;
      group.accumulators[m]!.add(index === undefined ? undefined : row[index]);
    }
    this.rows++;
  }

  /** Folds one row of a CSV page (its cells are read, never kept: the row object is reused). */
  addCsvRow(row: CsvRow): void {
    const planned = this.plan.groups;
    let level = this.root;
    let key = 0;
    for (let g = 0; g < planned.length; g++) {
      if (g > 0) level = this.next(level, key);
      key = planned[g]!.keyer.ofCsv(row, planned[g]!.index, this.ids[g]!);
    }
    const group = (level.get(key) as Group | undefined) ?? this.open(level, key, row);
    const { measures } = this.plan;
    for (let m = 0; m < measures.length; m++) group.accumulators[m]!.addCsv(row, measures[m]!.index ?? -1);
    this.rows++;
  }

  /** The level under `key`, made when first met. */
  private next(level: Level, key: number): Level {
    let next = level.get(key) as Level | undefined;
    if (next === undefined) {
      next = new Map();
      level.set(key, next);
    }
    return next;
  }

  /** Folds a page of rows, then lets go of it. */
  addRows(rows: Row[]): void {
    for (const row of rows) this.addRow(row);
    this.endPage();
  }

  /** After a page: no extreme keeps a cell that holds the page's text alive. */
  endPage(): void {
    if (this.settling)
      for (const group of this.groups) for (const accumulator of group.accumulators) accumulator.settle?.();
  }

  /** Whether a measure keeps a cell of the page (min, max). */
  private get settling(): boolean {
    return this.plan.measures.some((m) => m.measure.fn === "min" || m.measure.fn === "max");
  }

  /** A new group for the row's key: its output cells are the row's group values. */
  private open(level: Level, key: number, row: Row | CsvRow): Group {
    if (this.groups.length >= this.maxGroups) throw tooManyGroups(this.maxGroups);
    const group: Group = {
      cells: this.plan.groups.map((g) => {
        const cell = row instanceof CsvRow ? row.cell(g.index) : row[g.index];
        return isNull(cell) ? "null" : detached(g.value(cell));
      }),
      accumulators: this.plan.measures.map((m) => m.make()),
    };
    level.set(key, group);
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
