import { describe, expect, it } from "vitest";
import type { Table } from "../ckan/table.ts";
import { type HttpError, RowLimitExceeded } from "../errors.ts";
import { SHEET_ROWS, xlsxEncoder } from "../format/xlsx.ts";
import type { Batch } from "../rows/batch.ts";
import { encodeTable, toByteStream, type ByteStreamHooks } from "./byte-stream.ts";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A source of `size`-byte chunks, as many as asked for; says whether it was stopped (its finally ran). */
function source(size: number) {
  const state = { stopped: false, produced: 0 };
  async function* chunks(): AsyncGenerator<string, void, undefined> {
    try {
      for (;;) {
        state.produced++;
        yield "x".repeat(size);
      }
    } finally {
      state.stopped = true;
    }
  }
  return { chunks: chunks(), state };
}

function watched(size: number, stallMs: number, minBytesPerSecond = 0) {
  const { chunks, state } = source(size);
  const outcome: { cancelled: boolean; error?: HttpError } = { cancelled: false };
  const hooks: ByteStreamHooks = {
    failure: (reason) => `#EXPORT INCOMPLETE: ${reason}\n`,
    cancel: () => void (outcome.cancelled = true),
    done: (result) => void (result.error && (outcome.error = result.error)),
  };
  const reader = toByteStream(chunks, hooks, { stallMs, minBytesPerSecond }).getReader();
  return { reader, state, outcome };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(10);
  expect(check()).toBe(true);
}

describe("a download whose reader stops or trickles", () => {
  it("is stopped once no chunk was taken for the stall time: paging stopped, then its last line, then an error", async () => {
    const { reader, state, outcome } = watched(100, 100);
    await reader.read();
    await reader.read();
    // The reader goes quiet.
    await until(() => outcome.error !== undefined);
    expect(outcome.error?.status).toBe(408);
    expect(outcome.error?.message).toMatch(/no progress for 0\.1 s/);
    expect(outcome.cancelled).toBe(true);
    expect(state.stopped).toBe(true);
    const last = new TextDecoder().decode((await reader.read()).value);
    expect(last).toMatch(
      /^#EXPORT INCOMPLETE: The download made no progress for 0\.1 s .*\(HTTP 408 after 200 bytes\)\.$/,
    );
    expect((await reader.read()).value).toEqual(new TextEncoder().encode("\n"));
    await expect(reader.read()).rejects.toMatchObject({ status: 408 });
  });

  it("ends the stream if even its last line is not taken", async () => {
    const { reader, outcome } = watched(100, 50);
    await reader.read();
    await until(() => outcome.error !== undefined);
    await sleep(200);
    await expect(reader.read()).rejects.toMatchObject({ status: 408 });
  });

  it("is stopped when it is read slower than the minimum rate over the stall time", async () => {
    const { reader, state, outcome } = watched(10, 150, 4096);
    for (let i = 0; i < 40 && outcome.error === undefined; i++) {
      const { done } = await reader.read();
      if (done) break;
      await sleep(40);
    }
    expect(outcome.error?.status).toBe(408);
    expect(outcome.error?.message).toMatch(/slower than 4096 bytes a second/);
    expect(state.stopped).toBe(true);
    expect(outcome.cancelled).toBe(true);
  });

  it("is never stopped while its reader keeps up", async () => {
    const { reader, outcome } = watched(10_000, 150, 4096);
    for (let i = 0; i < 20; i++) {
      await reader.read();
      await sleep(10);
    }
    expect(outcome.error).toBeUndefined();
    await reader.cancel();
  });
});

describe("an XLSX export whose later pages are copied as bytes and that stops at the sheet's row limit", () => {
  /** The sheet's last row after a first page of one row, `copied` rows as bytes, then the pager's row limit. */
  async function lastRow(copied: number): Promise<string | undefined> {
    const columns = [{ id: "a", type: "text" }];
    const encoder = xlsxEncoder(columns, { header: ["a"] });
    async function* pages(): AsyncGenerator<Batch, void, undefined> {
      yield [['"first"']];
      yield { bytes: new Uint8Array(0), rows: copied, ends: new Uint32Array(0) };
      throw new RowLimitExceeded("More rows match than a sheet holds.");
    }
    const table: Table = {
      columns,
      total: undefined,
      expectedRows: undefined,
      firstPageRows: 1,
      pages: pages(),
      resumeAt: () => ({ rows: 0, afterId: undefined, total: undefined, estimated: false }),
    };
    await expect(async () => {
      for await (const _ of encodeTable(table, encoder, { rows: 0, chars: 0 }));
    }).rejects.toThrow(RowLimitExceeded);
    return encoder.cutOff?.("More rows match than a sheet holds.", true);
  }

  it("ends with the #EXPORT INCOMPLETE row when the sheet has a row left for it", async () => {
    expect(await lastRow(SHEET_ROWS - 3)).toMatch(/^<row><c [^>]*><is><t>#EXPORT INCOMPLETE: /);
  });

  it("adds no marker past the sheet's last row, counting the rows copied as bytes", async () => {
    expect(await lastRow(SHEET_ROWS - 2)).toBeUndefined();
  });
});
