// The emulator as a CKAN mounted at /data/en answers: the API under its site base only, and CKAN's
// HTML 404 page anywhere else, so an address with a segment missing or too many fails against the
// demo as it would against the real site.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";

describe("the CKAN emulator's paths", () => {
  let ckan: EmulatorServer;
  let root: EmulatorServer;

  beforeAll(async () => {
    [ckan, root] = await Promise.all([
      startEmulatorServer({ port: 0 }),
      startEmulatorServer({ port: 0, basePath: "" }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([ckan?.close(), root?.close()]);
  });

  it("answers CKAN's API under its base, with or without the API version", async () => {
    expect(ckan.base).toBe(`${ckan.url}/data/en`);
    for (const path of ["/api/action/status_show", "/api/3/action/status_show", "/api/3/action/status_show/"]) {
      const res = await fetch(`${ckan.base}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe("application/json;charset=utf-8");
      expect(((await res.json()) as { success: boolean }).success, path).toBe(true);
    }
    const search = await fetch(`${ckan.base}/api/action/datastore_search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ resource_id: EMULATOR_RESOURCES.sample, limit: 1 }),
    });
    expect(search.status).toBe(200);
    // An action CKAN does not have is still CKAN's JSON answer: the path is right.
    expect((await fetch(`${ckan.base}/api/action/no_such_action`)).headers.get("content-type")).toBe(
      "application/json;charset=utf-8",
    );
  });

  it("answers CKAN's HTML 404 page for a base with a segment missing or too many", async () => {
    const wrong = [
      `${ckan.url}/api/action/status_show`, // no mount prefix, no language
      `${ckan.url}/data/api/action/status_show`, // no language segment
      `${ckan.url}/en/api/3/action/status_show`, // no mount prefix
      `${ckan.base}/dataset/api/action/status_show`, // a page's path pasted as the base
      `${ckan.base}/en/api/action/status_show`, // the language twice
      `${ckan.base}/api/action/datastore_search/extra`,
      `${ckan.base}/`,
    ];
    for (const url of wrong) {
      const res = await fetch(url, {
        method: url.includes("datastore_search") ? "POST" : "GET",
        body: url.includes("datastore_search") ? "{}" : undefined,
      });
      expect(res.status, url).toBe(404);
      expect(res.headers.get("content-type"), url).toBe("text/html; charset=utf-8");
      expect(await res.text(), url).toMatch(/^<!DOCTYPE html>[\s\S]*<title>Error \[404\] - CKAN<\/title>/);
    }
  });

  it("serves a CKAN at the site root when its base path is empty", async () => {
    expect(root.base).toBe(root.url);
    expect((await fetch(`${root.url}/api/3/action/status_show`)).status).toBe(200);
    expect((await fetch(`${root.url}/data/en/api/3/action/status_show`)).status).toBe(404);
  });
});
