import { describe, expect, it } from "vitest";
import { addDecimal, decimalText, divideDecimal, parseDecimal, wholeDecimal, type Decimal } from "./decimal.ts";
import { float8Text } from "./float-text.ts";

const d = (text: string): Decimal => parseDecimal(text)!;
const avg = (values: string[]): string =>
  decimalText(divideDecimal(values.map(d).reduce(addDecimal), wholeDecimal(values.length)));

describe("numeric as PostgreSQL computes it", () => {
  it("sums exactly, to the largest scale met (trailing zeros kept)", () => {
    expect(decimalText(addDecimal(d("1104955.6"), d("0.10")))).toBe("1104955.70");
    expect(decimalText(addDecimal(d("12345678901234567890.123456789"), d("-0.000000001")))).toBe(
      "12345678901234567890.123456788",
    );
    expect(decimalText(addDecimal(d("-0.50"), d("0.50")))).toBe("0.00");
    expect(decimalText(d("-.5"))).toBe("-0.5");
  });

  it("divides with numeric_div's scale: at least 16 significant digits, rounded half away from zero", () => {
    // Real CKAN 2.12 over PostgreSQL 15 (ckan-2.12-sql-responses/group_by_month.json): sum(amount)::text
    // and avg(amount)::text of one group, over its non-null amounts (494 of its 535 rows, and so on).
    expect(decimalText(divideDecimal(d("-1692618.04"), wholeDecimal(494)))).toBe("-3426.3523076923076923");
    expect(decimalText(divideDecimal(d("-1453535.68"), wholeDecimal(462)))).toBe("-3146.1811255411255411");
    expect(decimalText(divideDecimal(d("779342.36"), wholeDecimal(494)))).toBe("1577.6161133603238866");
    expect(decimalText(divideDecimal(d("-182136.10"), wholeDecimal(494)))).toBe("-368.6965587044534413");
    expect(decimalText(divideDecimal(d("1028267.80"), wholeDecimal(477)))).toBe("2155.6976939203354298");
    expect(decimalText(divideDecimal(d("1104955.70"), wholeDecimal(478)))).toBe("2311.6228033472803347");
    // psql: SELECT 1::numeric / 3, avg(x) FROM (VALUES (1), (2)) v(x), 2::numeric / 3
    expect(decimalText(divideDecimal(d("1"), wholeDecimal(3)))).toBe("0.33333333333333333333");
    expect(avg(["1", "2"])).toBe("1.5000000000000000");
    expect(decimalText(divideDecimal(d("2"), wholeDecimal(3)))).toBe("0.66666666666666666667");
    expect(decimalText(divideDecimal(d("-2"), wholeDecimal(3)))).toBe("-0.66666666666666666667");
    expect(decimalText(divideDecimal(d("0.0001"), wholeDecimal(3)))).toBe("0.000033333333333333333333");
    expect(decimalText(divideDecimal(d("0"), wholeDecimal(7)))).toBe("0.00000000000000000000");
    // More decimals in than 16 significant digits need: the input's scale is kept.
    expect(avg(["12345678901234567890.123456789", "0.000000001"])).toBe("6172839450617283945.061728395");
  });

  it("writes float8 as PostgreSQL does (exponent outside 1e-4 .. 1e15)", () => {
    expect(float8Text(1.4603733967303512e19)).toBe("1.4603733967303512e+19");
    expect(float8Text(24044285744692.574)).toBe("24044285744692.574");
    expect(float8Text(1e-7)).toBe("1e-07");
    expect(float8Text(0.1)).toBe("0.1");
    expect(float8Text(Number.NaN)).toBe("NaN");
    expect(float8Text(-Infinity)).toBe("-Infinity");
  });
});
