import { parseAnswer } from "./src/ckan/raw-json.ts";
const cats = ["alpha", "beta", "gamma", "delta"];
const recs: string[] = [];
for (let i = 0; i < 32000; i++) recs.push(`[${JSON.stringify(cats[i % 4])},"2020-0${1 + (i % 9)}-11T10:11:12",${(i * 37) % 100000 - 50000}.${String(i % 100).padStart(2, "0")},${Math.random()},${i}]`);
const text = `{"help":"x","success":true,"result":{"fields":[{"id":"category","type":"text"},{"id":"created","type":"timestamp"},{"id":"amount","type":"numeric"},{"id":"ratio","type":"float8"},{"id":"_id","type":"int"}],"records":[${recs.join(",")}]}}`;
const bytes = new TextEncoder().encode(text);
console.log("page bytes", bytes.length);
for (let k = 0; k < 3; k++) {
  const c0 = process.cpuUsage();
  for (let p = 0; p < 32; p++) parseAnswer(bytes.slice());
  const c = process.cpuUsage(c0);
  console.log("parse 1M rows CPU ms", ((c.user + c.system) / 1000).toFixed(0));
}
