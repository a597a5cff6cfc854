import { describe, expect, it } from "vitest";
import { csvPages, stringEnd } from "./csv-pages.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("CKAN's CSV records read for an aggregate", () => {
  it("finds the end of the records string past escaped quotes and backslashes", () => {
    for (const value of ['a"b', "a\\", 'a\\"', "", '\\\\"', "x".repeat(1000)]) {
      const json = `${JSON.stringify(value)},"next":1`;
      expect(stringEnd(bytes(json), 0)).toBe(JSON.stringify(value).length);
    }
  });

  it("gives each cell as CKAN's lists records write it: text quoted, null apart from empty, NaN quoted, booleans spelled out", () => {
    const rows: (string | undefined)[][] = [];
    // The row array is reused: each row is copied as it comes.
    const { passthrough } = csvPages((row) => rows.push([...row]));
    const columns = [
      { id: "name", type: "text" },
      { id: "amount", type: "numeric" },
      { id: "ratio", type: "float8" },
      { id: "active", type: "bool" },
      { id: "tags", type: "_text" },
      { id: "_id", type: "int" },
    ];
    const csv =
      'say "hi",1.50,NaN,t,"[""a,b""]",7\n"He said ""x"", then\nleft",,-Infinity,f,null,8\n"",-0.5,1e-07,,"[]",9\n';
    const answer = bytes(`{"records":${JSON.stringify(csv)},"fields":[]}`);
    const copied = passthrough(columns, 5).read(answer, '{"records":'.length);
    expect(copied.page.rows).toBe(3);
    expect(copied.lastId).toBe("9");
    expect(rows.map((r) => r.slice(0, 5))).toEqual([
      ['"say \\"hi\\""', "1.50", '"NaN"', "true", '["a,b"]'],
      ['"He said \\"x\\", then\\nleft"', undefined, '"-Infinity"', "false", "null"],
      ['""', "-0.5", "1e-07", undefined, "[]"],
    ]);
  });
});
