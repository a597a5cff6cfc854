import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Sha256 } from "./sha256.ts";

const reference = async (bytes: Uint8Array): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

describe("a SHA-256 whose state goes from one step to the next", () => {
  it("gives the runtime's digest for the standard vectors", async () => {
    const utf8 = new TextEncoder();
    expect(new Sha256().hex()).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(new Sha256().update(utf8.encode("abc")).hex()).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
    const long = utf8.encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
    expect(new Sha256().update(long).hex()).toBe(await reference(long));
  });

  it("gives the runtime's digest however the bytes are cut and whenever the state is saved and loaded", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 700 }),
        fc.array(fc.nat(700), { maxLength: 6 }),
        async (bytes, cuts) => {
          const at = [0, ...cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length];
          let hasher = new Sha256();
          for (let i = 1; i < at.length; i++) {
            hasher.update(bytes.subarray(at[i - 1], at[i]));
            // A step ends: its state goes through JSON, as a Workflow step result does.
            hasher = new Sha256(JSON.parse(JSON.stringify(hasher.save())));
          }
          expect(hasher.hex()).toBe(await reference(bytes));
        },
      ),
      { numRuns: 300 },
    );
  });
});
