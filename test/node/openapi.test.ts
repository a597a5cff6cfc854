// /openapi.json is valid OpenAPI 3.1, checked against the specification's own JSON schema, and it is
// the route table: every route the router registers is described, and nothing else.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { FORMATS, type FormatName } from "../../src/query/formats.ts";
import { PARAMETERS, parametersFor } from "../../src/query/params.ts";
import { openApiDocument } from "../../src/routes/openapi.ts";
import { patternOf } from "../../src/routes/middleware.ts";
import { ROUTES } from "../../src/routes/table.ts";

type Operation = { parameters?: { name: string; description: string }[] };
const document = openApiDocument(ROUTES, "https://export.example.org");
const paths = document.paths as Record<string, Record<string, Operation>>;

/** An OpenAPI path with a sample value in each `{part}`. */
const sample = (path: string): string => path.replace(/\{\w+\}/g, "x");

describe("the OpenAPI description", () => {
  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("describes every method of every route in the table", () => {
    for (const route of ROUTES) {
      const described = Object.entries(route.openapi());
      expect(described.length, `${route.path} has no OpenAPI entry`).toBeGreaterThan(0);
      for (const [path, operations] of described) {
        expect(sample(path), `${path} is not a path of ${route.path}`).toMatch(patternOf(route.path));
        for (const method of route.methods)
          expect(operations[method.toLowerCase() as "get"], `${method} ${path}`).toBeDefined();
        expect(paths[path], `${path} is missing from /openapi.json`).toEqual(operations);
      }
    }
  });

  it("names no route that does not exist", () => {
    for (const [path, operations] of Object.entries(paths)) {
      for (const method of Object.keys(operations)) {
        const route = ROUTES.find(
          (r) => patternOf(r.path).test(sample(path)) && r.methods.some((m) => m.toLowerCase() === method),
        );
        expect(route, `${method.toUpperCase()} ${path} is documented but no route serves it`).toBeDefined();
      }
    }
  });

  it("documents every parameter of the table, in the table's words", () => {
    // Each export lists its format's parameters; all of them together are the table.
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      expect(paths[`/export.${format}`]!.get!.parameters!.map((p) => p.name)).toEqual(
        parametersFor(format).map((p) => p.name),
      );
    }
    // Aggregates list theirs the same way, from the same table.
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      expect(paths[`/aggregate.${format}`]!.get!.parameters!.map((p) => p.name)).toEqual(
        parametersFor(format, "aggregate").map((p) => p.name),
      );
    }
    const documented = Object.values(FORMATS).flatMap((f) => [
      ...paths[`/export.${f.extension}`]!.get!.parameters!,
      ...paths[`/aggregate.${f.extension}`]!.get!.parameters!,
    ]);
    expect(PARAMETERS.filter((p) => !documented.some((d) => d.name === p.name)).map((p) => p.name)).toEqual([]);
    for (const p of PARAMETERS) expect(documented.find((c) => c.name === p.name)?.description).toContain(p.meaning);
  });
});
