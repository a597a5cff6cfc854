import { describe, expect, it } from "vitest";
import { CkanValidationError, CkanValidationFault } from "../ckan/error-answers.ts";
import { notA } from "../aggregate/values.ts";
import { ClientBusy, IsolateBusy } from "../ckan/page-budget.ts";
import {
  BadParameter,
  ConfigurationError,
  HttpError,
  RowLimitExceeded,
  toHttpError,
  TooManyRequests,
  UpstreamFailure,
} from "../errors.ts";
import { xlsxZip } from "../format/xlsx.ts";
import { DEFLATED, ZipWriter } from "../format/zip.ts";
import { CarryLost, isPermanent, TooManyParts } from "./errors.ts";

describe("a snapshot step that fails is tried again, or not, by the class of its failure", () => {
  it("tries again what a later try may mend: CKAN down, slow or busy, this isolate busy, a setting, a fault", () => {
    for (const error of [
      new UpstreamFailure(502, "CKAN answered HTTP 502."),
      new UpstreamFailure(503, "CKAN is rate-limiting this worker; try again later."),
      new CkanValidationFault(504, "The CKAN search took too long.", {}),
      notA("12x", "amount", "a number"),
      new IsolateBusy(8),
      new ClientBusy(3),
      new TooManyRequests("Too many requests.", 10),
      new ConfigurationError("CKAN_BASE_URL", "is not set"),
      toHttpError(new TypeError("a bug")),
      new Error("R2 is down"),
    ])
      expect(isPermanent(error), error.message).toBe(false);
  });

  it("stops at once on a refusal of the request and on its own permanent failures", () => {
    for (const error of [
      new HttpError(404, "The resource was not found on the CKAN site."),
      new HttpError(403, "The configured CKAN token cannot read this resource."),
      new CkanValidationError(400, "CKAN rejected filters: invalid value.", {}, "filters"),
      new BadParameter("limit", "limit must be a whole number."),
      new RowLimitExceeded("More than 1000 rows match."),
      new TooManyParts(10000, 5 * 1024 * 1024),
      new CarryLost("The carried bytes are gone."),
    ])
      expect(isPermanent(error), error.message).toBe(true);
  });

  it("stops at once on an XLSX past ZIP's 4 GiB: its sheet, the archive or an entry's sizes, which a later try passes again", () => {
    const GIB4 = 2 ** 32;
    const caught = (make: () => unknown): unknown => {
      try {
        make();
      } catch (error) {
        return error;
      }
      throw new Error("nothing was thrown");
    };
    const entry = (): ZipWriter => {
      const zip = new ZipWriter();
      zip.startEntry("xl/worksheets/sheet1.xml", DEFLATED);
      return zip;
    };
    for (const error of [
      caught(() => xlsxZip({ crc: 0, size: GIB4 - 10, compressed: 1000, tail: "" }).write(new Uint8Array(100))),
      caught(() => xlsxZip({ crc: 0, size: GIB4, compressed: GIB4, tail: "" })),
      caught(() => entry().finishEntry(0, 1000, GIB4)),
    ])
      expect(isPermanent(error), String(error)).toBe(true);
  });
});
