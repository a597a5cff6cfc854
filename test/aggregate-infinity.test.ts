// A date column may hold `infinity` and `-infinity` (PostgreSQL's, which CKAN's lists write as such):
// a bucket of either is itself, as date_trunc gives, not a refusal.
import { expect, it } from "vitest";
import { harness } from "./harness.ts";

const FIELDS = [
  { id: "_id", type: "int" },
  { id: "d", type: "date" },
];
const D = ["2020-06-01", "infinity", "2020-06-15", "-infinity", "infinity", "2020-07-02", null];

/** datastore_search's answer for these rows, as CKAN 2.10 gives it in either records format. */
function answer(body: Record<string, unknown>): Response {
  const asked = Array.isArray(body.fields) ? (body.fields as string[]) : FIELDS.map((f) => f.id);
  const fields = asked.map((id) => FIELDS.find((f) => f.id === id)!);
  const limit = typeof body.limit === "number" ? body.limit : 100;
  const offset = typeof body.offset === "number" ? body.offset : 0;
  const all = D.map((d, i) => ({ _id: i + 1, d }));
  if (body.sort === "_id desc") all.reverse();
  const rows = all.slice(offset, offset + limit);
  const records =
    body.records_format === "csv"
      ? rows.map((row) => `${asked.map((id) => row[id as keyof typeof row] ?? "").join(",")}\n`).join("")
      : rows.map((row) => asked.map((id) => row[id as keyof typeof row]));
  return Response.json({ help: "", success: true, result: { fields, records, total: D.length, limit } });
}

it("month() of a date column holding infinity and -infinity: one group each", async () => {
  const { get } = harness({
    env: { PAGE_SIZE: "2" },
    fault: (_, body) => (body.resource_id !== undefined ? answer(body) : undefined),
  });
  const res = await get("/aggregate.json?resource=sample&group_by=month(d)&measures=count");
  expect(res.status).toBe(200);
  const groups = (await res.json()) as { "month(d)": string | null; count: number }[];
  expect(new Map(groups.map((g) => [g["month(d)"], g.count]))).toEqual(
    new Map<string | null, number>([
      ["2020-06-01", 2],
      ["infinity", 2],
      ["-infinity", 1],
      ["2020-07-01", 1],
      [null, 1],
    ]),
  );
});
