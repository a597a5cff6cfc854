// /openapi.json is valid OpenAPI 3.1, checked against the specification's own JSON schema.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/discovery/openapi.ts";
import { FORMATS, type FormatName } from "../../src/query/formats.ts";
import { PARAMETERS, parametersFor } from "../../src/query/params.ts";

describe("the OpenAPI description", () => {
  const document = openApiDocument("https://export.example.org");

  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("documents every parameter of the table, in the table's words", () => {
    const paths = document.paths as Record<string, { get: { parameters: { name: string; description: string }[] } }>;
    // Each export lists its format's parameters; all of them together are the table.
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      expect(paths[`/export.${format}`]!.get.parameters.map((p) => p.name)).toEqual(parametersFor(format).map((p) => p.name));
    }
    const documented = Object.values(FORMATS).flatMap((f) => paths[`/export.${f.extension}`]!.get.parameters);
    expect(PARAMETERS.filter((p) => !documented.some((d) => d.name === p.name)).map((p) => p.name)).toEqual([]);
    for (const p of PARAMETERS) expect(documented.find((c) => c.name === p.name)?.description).toContain(p.meaning);
  });
});
