import type { OutputColumn } from "./plan.ts";
import { project, type PageRow } from "./project.ts";
import type { Value } from "./schema.ts";
import type { RecordsFormat } from "./validate.ts";

// The four `records_format`s, each as JSON text for a run of page rows so the body can be
// written a slice at a time. objects/lists are array members; csv/tsv are the inside of one JSON
// string holding PostgreSQL COPY output (no header, LF rows, t/f booleans, NULL as nothing).

export type ChunkEncoder = (rows: readonly PageRow[], first: boolean) => string;

export function chunkEncoder(format: RecordsFormat, output: readonly OutputColumn[]): ChunkEncoder {
  switch (format) {
    case "objects": {
      const keys = output.map(({ id }) => `${JSON.stringify(id)}:`);
      return members(output, (values) => `{${values.map((value, i) => keys[i] + JSON.stringify(value)).join(",")}}`);
    }
    case "lists":
      return members(output, (values) => JSON.stringify(values));
    case "csv":
      return copyText(output, ",", /[",\r\n]/);
    case "tsv":
      return copyText(output, "\t", /["\t\r\n]/);
  }
}

function members(output: readonly OutputColumn[], encode: (values: Value[]) => string): ChunkEncoder {
  return (rows, first) => {
    const text = rows.map((row) => encode(project(output, row))).join(",");
    return first || text === "" ? text : `,${text}`;
  };
}

function copyText(output: readonly OutputColumn[], delimiter: string, special: RegExp): ChunkEncoder {
  const cell = (value: Value): string => {
    if (value === null) return "";
    if (typeof value === "boolean") return value ? "t" : "f";
    if (typeof value === "number") return floatText(value);
    // An empty string is quoted so it reads back as '' rather than NULL; `\.` would end COPY data.
    if (value === "" || value === "\\." || special.test(value)) return `"${value.replaceAll('"', '""')}"`;
    return value;
  };
  return (rows) => {
    const text = rows.map((row) => `${project(output, row).map(cell).join(delimiter)}\n`).join("");
    // The CSV lives inside a JSON string: escape it and drop the quotes JSON.stringify adds.
    return JSON.stringify(text).slice(1, -1);
  };
}

/** PostgreSQL writes exponents with at least two digits (1e-07 where JavaScript writes 1e-7). */
function floatText(value: number): string {
  const text = String(value);
  return text.includes("e") ? text.replace(/e([+-])(\d)$/, "e$10$2") : text;
}
