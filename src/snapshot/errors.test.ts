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
});
