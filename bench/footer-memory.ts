// The one step of a Parquet snapshot whose memory grows with the file: its last, which writes the
// footer from every row group's entry (format/parquet.ts, MAX_FOOTER_ENTRIES). Entries shaped as the
// bench table's (12 columns, a third of them text with bounds), as the snapshot keeps them (JSON
// lines), up to FOOTER_MIB of them; run it under a heap cap to see that the footer fits:
//   node --max-old-space-size=48 bench/footer-memory.ts     FOOTER_MIB (8)
import { parquetEnd } from "../src/format/parquet.ts";
import type { Column } from "../src/rows/types.ts";

const TYPES = ["int4", "text", "float8"];
const columns: Column[] = Array.from({ length: 12 }, (_, i) => ({ id: `c${i}`, type: TYPES[i % 3]! }));
const options = { names: columns.map((c) => c.id), numeric: "text" as const };
const chunk = (i: number) => [123_456 + i, 234_567 + i, i % 2 ? 4096 : 0, 12, `Some text ${i}`, `Zome text ${i}`];
const group = (g: number) => [16_384, ...Array.from({ length: 12 }, (_, i) => chunk(g * 12 + i))];

const cpuSeconds = (used: NodeJS.CpuUsage): number => (used.user + used.system) / 1e6;
const mib = Number(process.env.FOOTER_MIB ?? 8);
const groups = Math.floor((mib * 2 ** 20) / (JSON.stringify(group(5000)).length + 1));
const lines: string[] = [];
for (let g = 0; g < groups; g += 4)
  lines.push(JSON.stringify({ groups: Array.from({ length: Math.min(4, groups - g) }, (_, k) => group(g + k)) }));
const started = process.cpuUsage();
const footer = parquetEnd(
  columns,
  options,
  lines.map((line) => JSON.parse(line)),
);
console.log(
  `${mib} MiB of entries, ${groups} groups, ${groups * 12} column chunks: a ${(footer.byteLength / 2 ** 20).toFixed(1)} MiB footer ` +
    `(${(footer.byteLength / (groups * 12)).toFixed(0)} bytes a chunk) in ${(cpuSeconds(process.cpuUsage(started))).toFixed(1)} s of CPU`,
);
