import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { floatRead, readFloat } from "./float-read.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** readFloat's double, or Number()'s where it leaves the text to Number(), as the fold does. */
function read(text: string): { value: number; exact: boolean } {
  const b = bytes(text);
  const value = readFloat(b, 0, b.length);
  return { value: floatRead.ok ? value : Number(text), exact: floatRead.ok };
}

describe("a float8 cell read from its bytes", () => {
  it("is the double Number() reads, for decimals of up to 19 digits and 22 decimals", () => {
    fc.assert(
      fc.property(
        fc.bigInt(0n, 10n ** 19n - 1n),
        fc.integer({ min: 0, max: 24 }),
        fc.boolean(),
        (units, scale, minus) => {
          const digits = units.toString().padStart(scale + 1, "0");
          const text = `${minus ? "-" : ""}${scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`}`;
          expect(Object.is(read(text).value, Number(text))).toBe(true);
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it("reads PostgreSQL's shortest float8 texts exactly without Number(), and ties as Number() rounds them", () => {
    let exact = 0;
    for (let k = 1; k <= 20_000; k++) {
      const value = ((k * 2654435761) % 4294967296) / 4294967296;
      const text = String(value);
      const got = read(text);
      expect(got.value).toBe(value);
      if (got.exact) exact++;
    }
    expect(exact).toBeGreaterThan(19_000);
    // 2^53 + 1 is halfway between two doubles: left to Number(), which gives the even one.
    expect(read("9007199254740993").exact).toBe(false);
    for (const text of ["9007199254740993", "-9007199254740993", "0.1", "-0", "0.000", "123456789012345678.9"])
      expect(Object.is(read(text).value, Number(text))).toBe(true);
  });

  it("leaves exponents, NaN, the infinities and more digits to Number()", () => {
    for (const text of [
      "1e-07",
      "1.738914190048968e+16",
      "NaN",
      "Infinity",
      "-Infinity",
      "12345678901234567890",
      "",
      "-",
      ".",
    ])
      expect(read(text).exact).toBe(false);
  });
});
