import { describe, expect, it } from "vitest";
import { createEmulator, EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { parseConfig } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import { CsvRecordsStream } from "../format/csv-records.ts";
import { parseExportQuery } from "../query/export-query.ts";
import { batchRows, type RecordsReader } from "../rows/batch.ts";
import type { Column } from "../rows/types.ts";
import { siteFor } from "./site.ts";
import { openTable } from "./table.ts";

/**
 * workerd sends a `fetch` only once the isolate turns to its event loop; writing a page that has
 * already arrived never does. So the loop must turn once after asking for later pages, or they leave
 * only after the page before them is written, CKAN idle meanwhile.
 */
describe("the paging loop lets the pages it asks for leave before it hands on a page", () => {
  for (const [label, streamed, version] of [
    ["pages read whole, as rows", false, "2.10"],
    ["CSV pages read as they arrive", true, "2.10"],
    ["CKAN 2.12: the probe for the largest _id, then ranges", true, "2.12"],
  ] as const) {
    it(`(${label})`, async () => {
      const emulator = createEmulator({ version });
      /** For each request: whether the event loop has turned since it was made. */
      const asked: { turned: boolean }[] = [];
      let handedOn = 0;
      /** At each hand-on, and each time a page's CSV is read: whether every request made so far had its turn. */
      const turnedBefore: boolean[] = [];
      const allTurned = (): void => void turnedBefore.push(asked.every((a) => a.turned));
      const reading =
        (read: RecordsReader): RecordsReader =>
        (answer, at) => {
          allTurned();
          return read(answer, at);
        };
      const fetcher = (request: Request): Promise<Response> => {
        const entry = { turned: false };
        asked.push(entry);
        setTimeout(() => void (entry.turned = true), 0);
        return emulator.fetch(request);
      };
      const config = parseConfig({
        CKAN_BASE_URL: `https://turns-${label.length}.example`,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "500",
        UPSTREAM_CONCURRENCY: "3",
      } as unknown as Env);
      const query = parseExportQuery(new URLSearchParams({ resource: "sample", limit: "4000" }), "csv", config);
      const table = await openTable(siteFor(config, fetcher), query, {
        pageSize: config.pageSize,
        rowLimit: query.rowLimit,
        subrequestLimit: config.subrequestLimit,
        concurrency: config.upstreamConcurrency,
        ...(streamed
          ? {
              passthrough: (incoming: Column[], dropFrom: number) => ({
                recordsFormat: "csv" as const,
                read: reading(csvRecordsReader(incoming, dropFrom, true)),
                stream: () => new CsvRecordsStream(reading(csvRecordsReader(incoming, dropFrom, true))),
              }),
            }
          : {}),
      });
      let rows = 0;
      for await (const batch of table.pages) {
        allTurned();
        handedOn++;
        rows += batchRows(batch);
      }
      expect(rows).toBe(4000);
      expect(asked.length).toBeGreaterThan(4);
      expect(handedOn).toBeGreaterThan(4);
      expect(turnedBefore.every(Boolean)).toBe(true);
    });
  }
});
