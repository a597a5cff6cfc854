// /openapi.json is valid OpenAPI 3.1, checked against the specification's own JSON schema.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/discovery/openapi.ts";
import { PARAMETERS } from "../../src/query/params.ts";

describe("the OpenAPI description", () => {
  const document = openApiDocument("https://export.example.org");

  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("documents every parameter of the table, in the table's words", () => {
    const csv = (document.paths as Record<string, { get: { parameters: { name: string; description: string }[] } }>)["/export.csv"]!.get.parameters;
    expect(csv.map((p) => p.name)).toEqual(PARAMETERS.map((p) => p.name));
    for (const p of PARAMETERS) expect(csv.find((c) => c.name === p.name)?.description).toContain(p.meaning);
  });
});
