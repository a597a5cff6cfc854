import { describe, expect, it } from "vitest";
import { guardFormula } from "./guard.ts";
import { isNumericType } from "../rows/values.ts";

describe("formula guard", () => {
  it.each([
    ["=SUM(A1:A9)", "'=SUM(A1:A9)"],
    ["+desert", "'+desert"],
    ["-desert", "'-desert"],
    ["@canyon", "'@canyon"],
    ["\tindent", "'\tindent"],
    ["\rcr", "'\rcr"],
    ["\nlf", "'\nlf"],
    ["\uff1dHYPERLINK()", "'\uff1dHYPERLINK()"],
    ["\uff0b1", "'\uff0b1"],
    ["\uff0dx", "'\uff0dx"],
    ["\uff20x", "'\uff20x"],
    ["- 12", "'- 12"],
    ["-12.5 ", "'-12.5 "],
    ["=1", "'=1"],
    // Past leading spaces and invisible characters, which some imports trim before they judge.
    [" =x", "' =x"],
    ["\u00a0=1+1", "'\u00a0=1+1"],
    ["\u3000=1+1", "'\u3000=1+1"],
    ["\u200b=1+1", "'\u200b=1+1"],
    ["\u200d\u2060@x", "'\u200d\u2060@x"],
    ["\ufeff=1+1", "'\ufeff=1+1"],
    ["\u202e=1+1", "'\u202e=1+1"],
    ["  \u00a0+cmd", "'  \u00a0+cmd"],
    // Any whitespace leads, line breaks and vertical tabs too (JavaScript's \s).
    ["\u000b=1", "'\u000b=1"],
    [" \n=x", "' \n=x"],
    // Look-alikes: the small forms beside the full-width ones.
    ["\ufe66HYPERLINK()", "'\ufe66HYPERLINK()"],
    ["\ufe62x", "'\ufe62x"],
    ["\ufe63x", "'\ufe63x"],
    ["\ufe6bx", "'\ufe6bx"],
  ])("guards %j", (input, expected) => {
    expect(guardFormula(input)).toBe(expected);
  });

  it.each([
    "-12.5",
    "+3",
    "-403",
    "1e5",
    "-.5",
    "2.",
    "plain text",
    "",
    "a=b",
    " -12",
    "\u00a0",
    " plain",
    " \tx",
    "\ufeff\n",
  ])("leaves %j alone", (input) => {
    expect(guardFormula(input)).toBe(input);
  });

  it("knows numeric PostgreSQL types", () => {
    for (const t of ["int", "int4", "int8", "numeric", "float8", "float"]) expect(isNumericType(t)).toBe(true);
    for (const t of ["text", "timestamp", "bool", "_text", "json"]) expect(isNumericType(t)).toBe(false);
  });
});
