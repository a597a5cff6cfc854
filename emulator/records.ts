import { copyCell, jsonCell, type Version } from "./cells.ts";
import type { OutputColumn } from "./plan.ts";
import { project, type PageRow } from "./project.ts";
import { pyJsonString } from "./py-json.ts";
import type { Table } from "./schema.ts";
import type { RecordsFormat } from "./validate.ts";

// The four `records_format`s, as the text CKAN puts in the answer for a run of page rows, so the
// body can be written a slice at a time.
// - objects / lists: JSON built by PostgreSQL (compact, non-ASCII as is), spliced in unchanged:
//   `{"_id":1,"amount":-82469.50,...}` / `[1,-82469.50,...]`.
// - csv / tsv: COPY ... TO STDOUT csv of the formatted columns (no header, LF after each row, t/f,
//   NULL as an empty cell, quotes only where needed), which CKAN then writes as one JSON string
//   with Python's escaping (\u00d1 for Ñ).

export type ChunkEncoder = (rows: readonly PageRow[], first: boolean) => string;

export function chunkEncoder(
  format: RecordsFormat,
  table: Table,
  output: readonly OutputColumn[],
  version: Version,
): ChunkEncoder {
  const types = output.map(({ type }) => type);
  switch (format) {
    case "objects": {
      const keys = output.map(({ id }) => `${JSON.stringify(id)}:`);
      return members(
        table,
        output,
        (values) => `{${values.map((value, i) => keys[i] + jsonCell(types[i] ?? "text", value, version)).join(",")}}`,
      );
    }
    case "lists":
      return members(
        table,
        output,
        (values) => `[${values.map((value, i) => jsonCell(types[i] ?? "text", value, version)).join(",")}]`,
      );
    case "csv":
      return copyText(table, output, version, ",", /[",\r\n]/);
    case "tsv":
      return copyText(table, output, version, "\t", /["\t\r\n]/);
  }
}

function members(
  table: Table,
  output: readonly OutputColumn[],
  encode: (values: ReturnType<typeof project>) => string,
): ChunkEncoder {
  return (rows, first) => {
    const text = rows.map((row) => encode(project(table, output, row))).join(",");
    return first || text === "" ? text : `,${text}`;
  };
}

function copyText(
  table: Table,
  output: readonly OutputColumn[],
  version: Version,
  delimiter: string,
  special: RegExp,
): ChunkEncoder {
  const types = output.map(({ type }) => type);
  return (rows) => {
    let text = "";
    for (const row of rows) {
      const cells = project(table, output, row).map((value, i) => {
        const cell = copyCell(types[i] ?? "text", value, version);
        if (cell === null) return "";
        // An empty string is quoted so it reads back as '' rather than NULL; `\.` would end COPY data.
        if (cell === "" || cell === "\\." || special.test(cell)) return `"${cell.replaceAll('"', '""')}"`;
        return cell;
      });
      text += `${cells.join(delimiter)}\n`;
    }
    // The CSV lives inside a JSON string: escape it and drop the quotes.
    return pyJsonString(text).slice(1, -1);
  };
}
