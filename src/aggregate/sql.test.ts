import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/config.ts";
import type { Column } from "../rows/types.ts";
import { planAggregate } from "./plan.ts";
import { parseAggregateQuery } from "./query.ts";
import { aggregateStatement } from "./sql.ts";

// The statement an aggregate link becomes: whatever the link holds, what reaches SQL as SQL is the
// builder's own skeleton; column names only as quoted identifiers of the table's own columns, values
// only as escaped literals.

const ID = "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2";
const config = parseConfig({ CKAN_BASE_URL: "https://portal.example", RESOURCES: { sample: ID } });

const HOSTILE_COLUMN = `x"; DROP TABLE "users"; --`;
const COLUMNS: Column[] = [
  { id: "category", type: "text" },
  { id: "amount", type: "numeric" },
  { id: "created", type: "timestamp" },
  { id: "day", type: "date" },
  { id: HOSTILE_COLUMN, type: "text" },
  { id: "it's", type: "int4" },
  { id: "tags", type: "_text" },
];

function statement(link: string) {
  const query = parseAggregateQuery(new URL(link, "https://x.test").searchParams, "csv", config);
  return aggregateStatement(query, planAggregate(query.aggregate, COLUMNS), {
    columns: COLUMNS,
    before212: false,
    maxGroups: 100,
  });
}

/**
 * The statement with every quoted identifier replaced by `I` and every literal by `L`: what is left
 * is SQL the builder wrote. A literal or identifier that broke out would leave its text here.
 */
function skeleton(sql: string): string {
  let out = "";
  let i = 0;
  while (i < sql.length) {
    if (sql[i] === '"') {
      i++;
      while (i < sql.length && !(sql[i] === '"' && sql[i + 1] !== '"')) i += sql[i] === '"' ? 2 : 1;
      i++;
      out += "I";
    } else if (sql.startsWith("E'", i)) {
      i += 2;
      while (i < sql.length && !(sql[i] === "'" && sql[i + 1] !== "'")) i += sql[i] === "\\" || sql[i] === "'" ? 2 : 1;
      i++;
      out += "L";
    } else if (sql[i] === "'") {
      const end = sql.indexOf("'", i + 1);
      out += `'${sql.slice(i + 1, end)}'`;
      i = end + 1;
    } else {
      out += sql[i++];
    }
  }
  return out;
}

describe("the SQL of an aggregate", () => {
  it("is one SELECT ... GROUP BY over the resource's table, every result cast to text", () => {
    const built = statement(
      `/aggregate.csv?resource=sample&group_by=category,month(created),day(day)&measures=count,sum(amount),avg(amount),min(category)&sort=sum(amount) desc&limit=10`,
    );
    expect(built?.sql).toBe(
      `SELECT ("category")::text AS "c0", (date_trunc('month', "created"))::text AS "c1", (date_trunc('day', "day"::timestamp))::text AS "c2", ` +
        `(count(*))::text AS "c3", (sum("amount"))::text AS "c4", (avg("amount"))::text AS "c5", (min("category" COLLATE "C"))::text AS "c6", (count(*) OVER ())::text AS "groups" ` +
        `FROM "${ID}" GROUP BY "category", date_trunc('month', "created"), date_trunc('day', "day"::timestamp) ` +
        `ORDER BY sum("amount") DESC, "category" COLLATE "C" ASC, date_trunc('month', "created") ASC, date_trunc('day', "day"::timestamp) ASC LIMIT 10`,
    );
  });

  it("writes CKAN's filters and full-text condition with escaped literals", () => {
    const built = statement(
      `/aggregate.csv?resource=sample&filter.category=a&filter.category=b&filter.amount[gte]=10&q=glacier`,
    );
    expect(built?.sql).toBe(
      `SELECT (count(*))::text AS "c0", (count(*) OVER ())::text AS "groups" FROM "${ID}" WHERE ("category" = E'a' OR "category" = E'b') AND "amount" >= E'10' AND "_full_text" @@ plainto_tsquery('english', E'glacier') LIMIT 101`,
    );
  });

  it("keeps hostile column names, values and q inside their quotes", () => {
    const hostileValue = `x' OR 1=1; DROP TABLE "users"; --\\' \\\\ ''`;
    const hostileQ = `'); SELECT pg_sleep(10); --`;
    const link =
      `/aggregate.csv?resource=sample&group_by=${encodeURIComponent(`"${HOSTILE_COLUMN.replaceAll('"', '""')}"`)}` +
      `&measures=${encodeURIComponent(`count("it's"),max("${HOSTILE_COLUMN.replaceAll('"', '""')}")`)}` +
      `&filters=${encodeURIComponent(JSON.stringify({ category: hostileValue, "it's": [hostileValue, 1] }))}` +
      `&q=${encodeURIComponent(hostileQ)}`;
    const built = statement(link);
    expect(built).toBeDefined();
    expect(skeleton(built!.sql)).toBe(
      `SELECT (I)::text AS I, (count(I))::text AS I, (max(I COLLATE I))::text AS I, (count(*) OVER ())::text AS I FROM I ` +
        `WHERE I = L AND (I = L OR I = L) AND I @@ plainto_tsquery('english', L) GROUP BY I ORDER BY I COLLATE I ASC LIMIT 101`,
    );
    // The hostile column is named as itself, quotes doubled.
    expect(built!.sql).toContain(`"x""; DROP TABLE ""users""; --"`);
    // The value is one literal: its quotes doubled, its backslashes doubled.
    expect(built!.sql).toContain(`E'x'' OR 1=1; DROP TABLE "users"; --\\\\'' \\\\\\\\ '''''`);
  });

  it("leaves to the worker what SQL would not compute the same way: arrays, and text holding NUL", () => {
    expect(statement(`/aggregate.csv?resource=sample&group_by=tags`)).toBeUndefined();
    expect(statement(`/aggregate.csv?resource=sample&filter.tags=a`)).toBeUndefined();
    expect(statement(`/aggregate.csv?resource=sample&filter.category=a%00b`)).toBeUndefined();
    expect(statement(`/aggregate.csv?resource=sample&filter.nope=a`)).toBeUndefined();
  });
});

describe("the answer to an aggregate's SQL", () => {
  it("reads the answer's text as CKAN's datastore_search writes each type", () => {
    const built = statement(
      `/aggregate.csv?resource=sample&group_by=category,month(created),day(day)&measures=count,sum(amount),max(created),min(day)`,
    )!;
    expect(
      built.row({
        c0: "alpha",
        c1: "2020-03-01 00:00:00",
        c2: "2020-03-05 00:00:00",
        c3: "12",
        c4: "NaN",
        c5: "2020-03-31 23:59:59.5",
        c6: "2020-03-01",
      }),
    ).toEqual([
      '"alpha"',
      '"2020-03-01T00:00:00"',
      '"2020-03-05"',
      "12",
      '"NaN"',
      '"2020-03-31T23:59:59.500"',
      '"2020-03-01"',
    ]);
    expect(
      built.row({ c0: null, c1: null, c2: null, c3: "0", c4: "-1692618.04", c5: "2020-03-31 23:59:59", c6: null }),
    ).toEqual(["null", "null", "null", "0", "-1692618.04", '"2020-03-31T23:59:59.000"', "null"]);
  });

  it("carries the number of groups before LIMIT and OFFSET in every record", () => {
    const built = statement(`/aggregate.csv?resource=sample&group_by=category&limit=1&offset=1`)!;
    expect(built.groups({ c0: "beta", c1: "4", groups: "7" })).toBe(7);
    expect(built.groups({ c0: "beta", c1: "4" })).toBeUndefined();
  });
});
