import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parquetColumn } from "./parquet-columns.ts";

const value = (type: string, raw: string, numeric: "text" | "double" = "text") =>
  parquetColumn({ id: "c", type }, "c", numeric).value(raw);

/** Microseconds since 1970 of an ISO timestamp, by Date (milliseconds) plus the digits below them. */
const micros = (iso: string): bigint =>
  BigInt(Date.parse(`${iso.slice(0, 23)}Z`)) * 1000n + BigInt(iso.slice(23, 26).padEnd(3, "0"));

describe("CKAN values as Parquet values", () => {
  it("keeps timestamps to the microsecond, from year 1 to 9999, as CKAN 2.10 and 2.12 write them", () => {
    for (const iso of [
      "1970-01-01T00:00:00.000000",
      "2020-01-01T00:16:17.500000",
      "1969-12-31T23:59:59.999999",
      "0099-01-02T03:04:05.000000",
      "0001-01-01T00:00:00.000000",
      "9999-12-31T23:59:59.999999",
      "2254-06-01T12:00:00.123456",
    ]) {
      const got = value("timestamp", JSON.stringify(iso.replace(/\.000000$/, "")));
      expect(BigInt(got as number | bigint), iso).toBe(micros(iso));
      // A number only where a double holds it exactly.
      if (typeof got === "number") expect(Number.isSafeInteger(got)).toBe(true);
    }
    expect(value("timestamp", '"2020-01-01T00:16:17.5"')).toBe(Number(micros("2020-01-01T00:16:17.500000")));
  });

  it("reads CKAN's usual timestamp text digit by digit to the microseconds the pattern gives", () => {
    const digits = (n: number, max: number): fc.Arbitrary<string> =>
      fc.integer({ min: 0, max }).map((v) => String(v).padStart(n, "0"));
    const timestamp = fc
      .tuple(
        digits(4, 9999),
        digits(2, 19),
        digits(2, 39),
        fc.constantFrom("T", " "),
        digits(2, 29),
        digits(2, 69),
        digits(2, 69),
        fc.constantFrom("", ".", ".5", ".12", ".120", ".000001", ".999999", ".1234567"),
      )
      .map(([y, mo, d, t, h, mi, s, fraction]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${fraction}`);
    // With an escape in its JSON text, the same timestamp is read by the pattern.
    const escaped = (iso: string): string =>
      `"${iso.slice(0, 10)}\\u00${iso.charCodeAt(10).toString(16)}${iso.slice(11)}"`;
    const attempt = (read: () => unknown): unknown => {
      try {
        return read();
      } catch {
        return "refused";
      }
    };
    fc.assert(
      fc.property(fc.array(timestamp, { minLength: 1, maxLength: 5 }), (isos) => {
        // One column for the rows in turn (it keeps the day of the row before), and one per value.
        const column = parquetColumn({ id: "c", type: "timestamp" }, "c", "text");
        for (const iso of isos) {
          expect(attempt(() => column.value(JSON.stringify(iso)))).toEqual(
            attempt(() => value("timestamp", escaped(iso))),
          );
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("reads integers digit by digit to the numbers Number gives, and refuses what int2 and int4 cannot hold", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (n) => {
        expect(value("int4", String(n))).toBe(n);
        expect(value("int4", `"${n}"`)).toBe(n);
      }),
      { numRuns: 2000 },
    );
    expect(Object.is(value("int4", "-0"), -0)).toBe(true);
    expect(value("int4", "007")).toBe(7);
    expect(value("int2", "-32768")).toBe(-32768);
    expect(() => value("int2", "32768")).toThrow(/16-bit/);
    for (const raw of ["-", "1.5", "12a", "--1", "99999999999", '""', "+5", "1e3", "12.0", '" 5"', '"0x10"'])
      expect(() => value("int4", raw), raw).toThrow(/32-bit/);
    // More than 9 digits, leading zeros: still the integer.
    expect(value("int4", "00000000012")).toBe(12);
  });

  it("counts dates in days since 1970, before and after", () => {
    expect(value("date", '"1970-01-01"')).toBe(0);
    expect(value("date", '"2000-03-01"')).toBe(Date.UTC(2000, 2, 1) / 86_400_000);
    expect(value("date", '"0099-01-02"')).toBe(Date.parse("0099-01-02T00:00:00Z") / 86_400_000);
  });

  it("keeps numeric text as CKAN wrote it unless doubles are asked for", () => {
    expect(value("numeric", "12345678901234567890.123456789")).toBe("12345678901234567890.123456789");
    expect(value("numeric", "-0.50")).toBe("-0.50");
    expect(value("numeric", "-0.50", "double")).toBe(-0.5);
    expect(value("int8", "9007199254740993")).toBe(9007199254740993n);
    expect(value("float8", "1e-07")).toBe(1e-7);
    expect(value("float8", "NaN")).toBeNaN();
  });

  it("refuses a value its column cannot hold, naming the column, rather than writing another", () => {
    expect(() => value("int4", "2147483648")).toThrow(/column "c" \(int4\)/);
    expect(() => value("timestamp", '"infinity"')).toThrow(/timestamp/);
    expect(() => value("bool", '"maybe"')).toThrow(/true or false/);
  });
});

describe("CKAN's CSV cells read as bytes (parquet-cells.ts)", () => {
  const utf8 = new TextEncoder();
  /** The value a cell's bytes give: the byte reader's, else the converter's from its text, as parquet-values.ts reads them. */
  const fromCell = (type: string, text: string) => {
    const column = parquetColumn({ id: "c", type }, "c", "text");
    const bytes = utf8.encode(`..${text}`);
    const read = column.cell?.(bytes, 2, bytes.length - 2);
    return read === undefined ? column.value(text) : read;
  };
  /** The value CKAN's JSON text of the same value gives (a string for dates and timestamps). */
  const fromJson = (type: string, text: string, quoted: boolean) => value(type, quoted ? JSON.stringify(text) : text);
  const same = (type: string, text: string, quoted: boolean) => {
    let want: unknown;
    try {
      want = fromJson(type, text, quoted);
    } catch (error) {
      // The same refusal; it quotes the text as CKAN sent it, the JSON's quotes included.
      expect(() => fromCell(type, text), `${type} ${text}`).toThrow(
        (error as Error).message.replace(/"([^"]*)" in/, "$1 in"),
      );
      return;
    }
    expect(fromCell(type, text), `${type} ${text}`).toEqual(want);
  };

  it("give the value CKAN's JSON gives, or the same refusal, for integers of every width", () => {
    const texts = ["0", "-0", "7", "-32768", "32767", "32768", "-32769", "2147483647", "2147483648", "-2147483648"];
    texts.push("1234567890", "0012", "+5", "1e3", "12.0", "", "-", "9007199254740993", "-123456789012345");
    texts.push("123456789012345", "1234567890123456", "9223372036854775807", "9223372036854775808");
    for (const type of ["int2", "int4", "int8"]) {
      for (const text of texts) same(type, text, false);
      // An empty quoted cell followed by a cell whose length starts with 0x2d (a minus): no sign, no number.
      const column = parquetColumn({ id: "c", type }, "c", "text");
      expect(column.cell?.(Uint8Array.of(0x2d, 0, 0, 0), 0, 0), type).toBeUndefined();
    }
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (n) => {
        for (const type of ["int2", "int4", "int8"]) same(type, String(n), false);
      }),
    );
  });

  it("give the day and microsecond CKAN's JSON gives, a space or a T between date and time", () => {
    const texts = ["2024-02-29", "1900-03-01", "0001-01-01", "9999-12-31", "2024-13-45", "2024-2-29", "24-02-29"];
    for (const text of texts) same("date", text, true);
    const stamps = [
      "2020-01-01T00:16:17",
      "2020-01-01 00:16:17",
      "2020-01-01T00:16:17.5",
      "2020-01-01T00:16:17.123456",
    ];
    stamps.push(
      "1969-12-31T23:59:59.999999",
      "0001-01-01T00:00:00",
      "2254-06-01T12:00:00.123456",
      "2020-01-01T00:16:17.",
    );
    stamps.push("2020-01-01T00:16:17.1234567", "2020-01-01T00:16", "2020-01-01X00:16:17", "2020-01-01T24:61:61");
    for (const text of stamps) same("timestamp", text, true);
    fc.assert(
      fc.property(
        fc.date({ min: new Date(Date.UTC(1, 0, 1)), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true }),
        fc.nat(999),
        (date, micro) => {
          const iso = `${date.toISOString().slice(0, 23)}${String(micro).padStart(3, "0")}`;
          same("timestamp", iso, true);
          same("timestamp", iso.slice(0, 19).replace("T", " "), true);
          same("date", iso.slice(0, 10), true);
        },
      ),
    );
  });

  it("give the booleans CKAN's JSON gives: t and f, or the words", () => {
    expect(fromCell("bool", "t")).toBe(true);
    expect(fromCell("bool", "f")).toBe(false);
    for (const text of ["true", "false"]) same("bool", text, false);
    expect(() => fromCell("bool", "yes")).toThrow(/true or false/);
  });
});
