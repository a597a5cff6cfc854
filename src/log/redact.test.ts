import { describe, expect, it } from "vitest";
import { redactorOf, SECRET_RUN } from "./redact.ts";

const TOKEN = `ckan-${"a1b2c3d4e5".repeat(20)}-zz`; // 212 characters, as CKAN's API tokens are long

/** Every run of SECRET_RUN characters of `secret` found in `text`. */
const runsOf = (secret: string, text: string): string[] =>
  Array.from({ length: secret.length - SECRET_RUN + 1 }, (_, i) => secret.slice(i, i + SECRET_RUN)).filter((run) =>
    text.includes(run),
  );

describe("redaction of secrets in text from upstream", () => {
  const redact = redactorOf([TOKEN, "admin-SECRET-c41f99", "key-1"]);

  it("removes the whole secret", () => {
    expect(redact(`Authorization: ${TOKEN} refused`)).toBe("Authorization: [redacted] refused");
  });

  it("removes a secret cut short, as a message clipped to 200 characters after quoting it", () => {
    const clipped = `bad token ${TOKEN}`.slice(0, 200);
    const out = redact(clipped);
    expect(runsOf(TOKEN, out)).toEqual([]);
    expect(out).toBe("bad token [redacted]");
  });

  it("removes any run of 8 characters of a secret, wherever it starts and ends", () => {
    const piece = TOKEN.slice(57, 57 + SECRET_RUN);
    expect(redact(`x${piece}y`)).toBe("x[redacted]y");
    expect(redact(`${TOKEN.slice(100, 130)}|${TOKEN.slice(3, 12)}`)).toBe("[redacted]|[redacted]");
    expect(redact("tail: SECRET-c41f99.")).toBe("tail: [redacted].");
  });

  it("removes a secret whatever its letters' case (a URL's host comes back lowered)", () => {
    expect(redact(`https://${TOKEN.slice(20, 40).toUpperCase()}.elsewhere.example/`)).toBe(
      "https://[redacted].elsewhere.example/",
    );
    expect(redact("tail: secret-C41F99.")).toBe("tail: [redacted].");
    expect(redact("a KEY-1 here")).toBe("a [redacted] here");
  });

  it("leaves shorter pieces and other text alone", () => {
    expect(redact(`${TOKEN.slice(0, SECRET_RUN - 1)} and plain text`)).toBe(
      `${TOKEN.slice(0, SECRET_RUN - 1)} and plain text`,
    );
  });

  it("removes a secret shorter than a run whole", () => {
    expect(redact("a key-1 here")).toBe("a [redacted] here");
  });
});
