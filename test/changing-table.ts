import Papa from "papaparse";
import { harness } from "./harness.ts";

// A table of `_id`s that changes while an export pages through it: every datastore_search is
// answered from the `_id`s as they are at that moment (the emulator's sample rows, picked by a list
// filter), so a spec can delete and add rows between requests, or cut an answer.

export interface ChangingTable {
  ids: number[];
  del(id: number): void;
  add(id: number): void;
}

export interface Scenario {
  initial: number[];
  /** Before each datastore_search is answered: the table may change. */
  before?: (body: Record<string, unknown>, table: ChangingTable) => void;
  /** The answer as sent: cut, say. */
  after?: (body: Record<string, unknown>, answer: Response) => Response | Promise<Response>;
  env?: Record<string, string>;
  path: string;
}

export const isFromEnd = (body: Record<string, unknown>): boolean => body.sort === "_id desc" && body.limit !== 1;

/** The export's `_id`s (its first column) and what is wrong with them: lost, twice, out of order, never there. */
export async function exportWhileChanging(s: Scenario): Promise<{ problems: string[]; ids: number[] }> {
  const table: ChangingTable = {
    ids: [...s.initial].sort((a, b) => a - b),
    del(id) {
      const k = this.ids.indexOf(id);
      if (k >= 0) this.ids.splice(k, 1);
    },
    add(id) {
      this.ids.push(id);
      this.ids.sort((a, b) => a - b);
    },
  };
  const everPresent = new Set(table.ids);
  const alwaysPresent = new Set(table.ids);
  const h = harness({
    env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3", ...s.env },
    emulator: { rowsMax: 32000 },
    fault: async (_, body) => {
      if (body.resource_id === undefined) return undefined;
      s.before?.(body, table);
      for (const id of table.ids) everPresent.add(id);
      for (const id of [...alwaysPresent]) if (!table.ids.includes(id)) alwaysPresent.delete(id);
      const order = body.sort === "_id desc" ? [...table.ids].reverse() : table.ids;
      const offset = (body.offset as number | undefined) ?? 0;
      const limit = Math.min(body.limit as number, 32000);
      const picked = limit === 0 ? [] : order.slice(offset, offset + limit);
      const asked = {
        ...body,
        offset: 0,
        limit: Math.max(1, picked.length),
        filters: { ...((body.filters as object) ?? {}), _id: picked.length > 0 ? picked : [-1] },
        include_total: false,
      };
      const upstream = await h.emulator.fetch(
        new Request("http://ckan.test/api/action/datastore_search", { method: "POST", body: JSON.stringify(asked) }),
      );
      const json = (await upstream.json()) as { result: Record<string, unknown> };
      if (limit === 0) json.result.records = body.records_format === "csv" ? "" : [];
      Object.assign(json.result, { limit, offset: body.offset, filters: body.filters ?? {}, sort: body.sort });
      if (body.include_total === true) json.result.total = table.ids.length;
      else delete json.result.total;
      const answer = new Response(JSON.stringify(json), { status: upstream.status, headers: upstream.headers });
      return s.after === undefined ? answer : s.after(body, answer);
    },
  });
  const res = await h.get(s.path);
  const text = await res.text();
  const ids = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" })
    .data.slice(1)
    .filter((r) => r[0] !== "" && !r[0]!.startsWith("#"))
    .map((r) => Number(r[0]));
  const problems: string[] = [];
  if (res.status !== 200) problems.push(`status ${res.status}: ${text.slice(0, 300)}`);
  if (text.includes("#EXPORT INCOMPLETE")) problems.push("incomplete");
  for (let k = 1; k < ids.length; k++)
    if (!(ids[k]! > ids[k - 1]!)) {
      problems.push(`not increasing at ${k}: ${ids[k - 1]} then ${ids[k]}`);
      break;
    }
  const seen = new Set(ids);
  const lost = [...alwaysPresent].filter((id) => !seen.has(id));
  if (lost.length > 0) problems.push(`lost ${lost.length}: ${lost.slice(0, 10).join(",")}`);
  const never = ids.filter((id) => !everPresent.has(id));
  if (never.length > 0) problems.push(`never present: ${never.slice(0, 10).join(",")}`);
  if (seen.size !== ids.length) problems.push(`twice: ${ids.length - seen.size}`);
  return { problems, ids };
}
