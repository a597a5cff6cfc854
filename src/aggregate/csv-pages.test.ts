import { describe, expect, it } from "vitest";
import { csvPages } from "./csv-pages.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("CKAN's CSV records read for an aggregate", () => {
  it("gives each cell as CKAN's lists records write it: text quoted, null apart from empty, NaN quoted, booleans spelled out", () => {
    const rows: (string | undefined)[][] = [];
    // The row object is reused: each row's cells are written out as it comes.
    const { passthrough } = csvPages((row) => rows.push(Array.from({ length: row.width }, (_, c) => row.cell(c))));
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

/** JSON text as CKAN's Python writes it: every character beyond ASCII as its \u escape. */
const asciiJson = (value: string): string =>
  JSON.stringify(value).replace(/[^\u0000-\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

describe("CKAN's escaped characters", () => {
  it("are read as their characters, quoted or not, a cell's escapes undone over its own bytes", () => {
    const rows: (string | undefined)[][] = [];
    const { passthrough } = csvPages((row) => rows.push(Array.from({ length: row.width }, (_, c) => row.cell(c))));
    const columns = [
      { id: "name", type: "text" },
      { id: "note", type: "text" },
      { id: "_id", type: "int" },
    ];
    const csv = 'Ñandú 😀,"Zürich, ""Ost"" \\ 😀",1\nplain,"a\tb",2\n';
    const answer = bytes(`{"records":${asciiJson(csv)}}`);
    expect(new TextDecoder().decode(answer)).toContain("\\u00d1and\\u00fa \\ud83d\\ude00");
    const copied = passthrough(columns, 2).read(answer, '{"records":'.length);
    expect(copied.lastId).toBe("2");
    expect(rows.map((r) => r.slice(0, 2))).toEqual([
      ['"Ñandú 😀"', '"Zürich, \\"Ost\\" \\\\ 😀"'],
      ['"plain"', '"a\\tb"'],
    ]);
  });
});

describe("a leading BOM", () => {
  it("is a character of the value, as CKAN's lists keep it, escaped or as UTF-8", () => {
    const rows: (string | undefined)[][] = [];
    const { passthrough } = csvPages((row) => rows.push([row.cell(0), row.textOf(0)]));
    const columns = [
      { id: "name", type: "text" },
      { id: "_id", type: "int" },
    ];
    const csv = "\ufeffx,1\n\ufeff,2\nx,3\n";
    for (const json of [asciiJson(csv), JSON.stringify(csv)]) {
      rows.length = 0;
      passthrough(columns, 1).read(bytes(`{"records":${json}}`), '{"records":'.length);
      expect(rows).toEqual([
        ['"\ufeffx"', "\ufeffx"],
        ['"\ufeff"', "\ufeff"],
        ['"x"', "x"],
      ]);
    }
  });
});

describe("a CSV page asked again", () => {
  const columns = [
    { id: "category", type: "text" },
    { id: "_id", type: "int" },
  ];
  const page = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, k) => `c${(from + k) % 3},${from + k}\n`).join("");
  const answer = (csv: string) => bytes(`{"result":{"records":${JSON.stringify(csv)}}}`);
  const at = '{"result":{"records":'.length;
  const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => String(from + k));

  it("folds each row once when the answer broke off after some rows and the page is read again, streamed or whole", () => {
    const folded: string[] = [];
    const { passthrough } = csvPages((row) => folded.push(row.textOf(1)));
    const reader = passthrough(columns, 1);
    // 60,000 rows of about 10 bytes: a stream reads the first ones once a segment of them arrived.
    const whole = answer(page(1, 60_000));
    const broken = reader.stream!();
    broken.push(whole.subarray(at + 1, at + 300_000));
    expect(broken.ended).toBe(false);
    const before = folded.length;
    expect(before).toBeGreaterThan(0);
    // The paging loop asks the page again: a second answer, then (had that one broken too) a whole read.
    const again = reader.stream!();
    again.push(whole.subarray(at + 1, at + 200_000));
    again.push(whole.subarray(at + 200_000));
    expect(again.ended).toBe(true);
    expect(folded).toEqual(ids(1, 60_000));
    reader.read(whole, at);
    expect(folded).toEqual(ids(1, 60_000));
    // The next page is a page of its own.
    reader.read(answer(page(60_001, 60_002)), at);
    expect(folded).toEqual(ids(1, 60_002));
  });
});
