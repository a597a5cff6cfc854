import { describe, expect, it } from "vitest";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import type { Column } from "../rows/types.ts";

const columns: Column[] = [
  { id: "amount", type: "numeric" },
  { id: "note", type: "text" },
  { id: "meta", type: "json" },
];
// CKAN's JSON text for each value: a json column keeps the whitespace it was stored with.
const rows = () => [
  ["12345678901234567890.10", '"two\\nlines"', '{"a":\n  1,\r\n "b": [1, 2]}'],
  ["-0.50", "null", "null"],
];

describe("JSON and NDJSON encoders", () => {
  it("copy CKAN's text for every value into JSON, whitespace included", () => {
    const encoder = jsonEncoder(columns);
    const text = encoder.begin() + encoder.page(rows()) + encoder.end();
    expect(text).toBe(
      '[\n{"amount":12345678901234567890.10,"note":"two\\nlines","meta":{"a":\n  1,\r\n "b": [1, 2]}},\n{"amount":-0.50,"note":null,"meta":null}\n]\n',
    );
  });

  it("keep NDJSON one record per line: a json value's line breaks become spaces, nothing else changes", () => {
    const encoder = ndjsonEncoder(columns);
    const lines = encoder.page(rows()).split("\n");
    expect(lines).toEqual([
      '{"amount":12345678901234567890.10,"note":"two\\nlines","meta":{"a":   1,   "b": [1, 2]}}',
      '{"amount":-0.50,"note":null,"meta":null}',
      "",
    ]);
    expect(JSON.parse(lines[0]!)).toEqual({
      amount: 12345678901234567890.1,
      note: "two\nlines",
      meta: { a: 1, b: [1, 2] },
    });
  });
});
