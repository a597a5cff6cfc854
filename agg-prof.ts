import { planAggregate } from "./src/aggregate/plan.ts";
import { parseAggregateSpec } from "./src/aggregate/spec.ts";
import { GroupTable } from "./src/aggregate/groups.ts";
const cols = [{ id: "amount", type: "numeric" }, { id: "ratio", type: "float8" }, { id: "category", type: "text" }, { id: "created", type: "timestamp" }];
const plan = planAggregate(parseAggregateSpec(process.argv[2] ?? "category,month(created)", process.argv[3] ?? "count,sum(amount),avg(ratio)", undefined), cols);
const cats = ['"alpha"', '"beta"', '"gamma"', '"delta"'];
const rows: (string | undefined)[][] = [];
for (let i = 0; i < 32000; i++) {
  const byId: Record<string, string> = { category: cats[i % 4]!, created: `"2020-0${1 + (i % 9)}-11T10:11:12"`, amount: `${(i * 37) % 100000 - 50000}.${String(i % 100).padStart(2, "0")}`, ratio: String(Math.random()) };
  rows.push(plan.read.map((c) => byId[c.id]));
}
for (let k = 0; k < 3; k++) {
const t = new GroupTable(plan, 100000);
const c0 = process.cpuUsage();
for (let p = 0; p < 32; p++) t.addRows(rows);
const c = process.cpuUsage(c0);
console.log("fold 1M rows CPU ms", ((c.user + c.system) / 1000).toFixed(0), t.size);
}
