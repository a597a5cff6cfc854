import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
it("answers", async () => {
  const res = await SELF.fetch("http://x/");
  expect(await res.text()).toBe("ok");
});
