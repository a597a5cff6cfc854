import { describe, expect, it } from "vitest";
import { isShortestDecimal } from "./shortest-float.ts";

/** A positional decimal's significant digits as `isShortestDecimal` takes them, or undefined when it has not 16 or 17. */
function parts(text: string): [number, number, number] | undefined {
  const match = /^-?(\d+)\.(\d+)$/.exec(text);
  if (match === null) return undefined;
  const digits = (match[1]! + match[2]!).replace(/^0+/, "");
  if (digits.length < 16 || digits.length > 17) return undefined;
  return [Number(digits.slice(0, -8)), Number(digits.slice(-8)), match[2]!.length];
}

/** A seeded generator: the same doubles every run. */
function* doubles(count: number): Generator<number> {
  let seed = 0x2545f491;
  for (let i = 0; i < count; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    const mantissa = seed / 2 ** 32;
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    yield (mantissa + seed / 2 ** 64) * 10 ** ((seed % 24) - 6);
  }
}

describe("the shortest text of a double, decided without printing it", () => {
  it("never calls a text shortest that String would write otherwise, and decides nearly all", () => {
    let decided = 0;
    let asked = 0;
    for (const d of doubles(40_000)) {
      const text = String(d);
      const last = Number(text.at(-1));
      // The double's own text, and texts near it that are not its shortest (or are another double's).
      for (const candidate of [text, `${text.slice(0, -1)}${(last + 1) % 10}`, `${text}7`, text.slice(0, -1)]) {
        const given = parts(candidate);
        if (given === undefined) continue;
        asked++;
        const answer = isShortestDecimal(...given);
        if (answer !== undefined) decided++;
        if (answer !== undefined) expect(answer, candidate).toBe(String(Number(candidate)) === candidate);
      }
    }
    expect(asked).toBeGreaterThan(50_000);
    expect(decided / asked).toBeGreaterThan(0.95);
  });

  it("knows PostgreSQL's float8 texts and the integers a double cannot hold", () => {
    expect(isShortestDecimal(...parts("0.24304664903320372")!)).toBe(true);
    expect(isShortestDecimal(...parts("24044285744692.574")!)).toBe(true);
    // 0.1's double, written with 17 digits: not its shortest text.
    expect(isShortestDecimal(...parts("0.10000000000000001")!)).toBe(false);
    expect(isShortestDecimal(...parts("0.30000000000000004")!)).toBe(true);
  });
});
