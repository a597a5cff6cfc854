import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isOneJsonValue } from "./json-valid.ts";

const utf8 = new TextEncoder();
// The text the bytes hold, a leading BOM kept: written bare, it would be in the export too.
const asText = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** JSON.parse's answer for the bytes' text: what a json cell written bare must pass. */
function parses(bytes: Uint8Array): boolean {
  try {
    JSON.parse(asText.decode(bytes));
    return true;
  } catch {
    return false;
  }
}

const check = (bytes: Uint8Array): void => {
  expect(isOneJsonValue(bytes, 0, bytes.length), JSON.stringify(asText.decode(bytes))).toBe(parses(bytes));
};

// Bytes JSON's grammar turns on, and a few it does not (controls, DEL, non-ASCII, a lone UTF-8 lead byte).
const PIECES = [
  ...'{}[]",:.-+eE0123456789 \t\n\rtruefalsnul\\/bfu"aAfF',
  "\\u00e9",
  "\\ud83d\\ude00",
  "\\ud800",
  "é",
  "\u0001",
  "\u0010",
  "\u001f",
  "\u007f",
  "\ufeff",
];

describe("a json cell is one JSON value exactly when JSON.parse says so", () => {
  it("agrees with JSON.parse on every JSON value, spaced any way", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom("", " ", "\n\t", "\r\n "), (value, space) => {
        check(utf8.encode(`${space}${JSON.stringify(value, null, space.length > 1 ? 1 : undefined)}${space}`));
      }),
      { numRuns: 500 },
    );
  });

  it("agrees with JSON.parse on near-JSON: values cut, joined, and bytes of JSON's grammar in any order", () => {
    const nearJson = fc.oneof(
      fc.jsonValue().map((v) => {
        const text = JSON.stringify(v);
        return text.slice(0, Math.floor(text.length / 2));
      }),
      fc.tuple(fc.jsonValue(), fc.jsonValue()).map(([a, b]) => `${JSON.stringify(a)},${JSON.stringify(b)}`),
      fc.array(fc.constantFrom(...PIECES), { maxLength: 24 }).map((p) => p.join("")),
    );
    fc.assert(
      fc.property(nearJson, (text) => check(utf8.encode(text))),
      { numRuns: 3000 },
    );
  });

  it("agrees on the cases a reader of JSON gets wrong, and on bytes that are not UTF-8", () => {
    for (const text of [
      "",
      " ",
      "01",
      "-",
      "-0",
      "1.",
      ".5",
      "1e",
      "1E+5",
      "+1",
      "[1,]",
      '{"a":1,}',
      '{"a" 1}',
      "{1:2}",
      '"\\x"',
      '"\\u12"',
      '"\\u12zz"',
      '"\\uD83D\\uDE00"',
      '"tab\there"',
      '"\u001f"',
      "[[[[]]]]",
      "\ufeff{}",
      "nul",
      "truex",
      "[] []",
      '"a"b',
      '{"":""}',
    ])
      check(utf8.encode(text));
    check(new Uint8Array([0x22, 0xc3, 0x22])); // a lead byte without its second, inside a string
    check(new Uint8Array([0xc3, 0x31])); // outside one
    check(new Uint8Array([0x22, 0xff, 0x5c, 0x6e, 0x22]));
  });

  it("reads only its own bytes, and nests deeper than it counts itself", () => {
    const cell = utf8.encode('x[1,{"a":[true,null]}]y');
    expect(isOneJsonValue(cell, 1, cell.length - 1)).toBe(true);
    expect(isOneJsonValue(cell, 1, cell.length - 2)).toBe(false);
    const deep = `${"[".repeat(1000)}${"]".repeat(1000)}`;
    check(utf8.encode(deep));
    check(utf8.encode(`${"[".repeat(1000)}${"]".repeat(999)}`));
  });
});
