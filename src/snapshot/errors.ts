import { CkanValidationFault } from "../ckan/error-answers.ts";
import { IsolateBusy } from "../ckan/page-budget.ts";
import {
  ClientTooSlow,
  ConfigurationError,
  HttpError,
  InternalFault,
  PermanentFailure,
  TooManyRequests,
  UpstreamFailure,
} from "../errors.ts";

// What can go wrong in a snapshot run, as classes (PermanentFailure, a failure no later try can mend,
// is the shared one of errors.ts): whether a step is tried again follows from the class of its
// failure, never from a property added to an error.

/** The file needs more than R2's 10,000 parts of SNAPSHOT_PART_BYTES. */
export class TooManyParts extends PermanentFailure {
  override name = "TooManyParts";
  constructor(maxParts: number, partBytes: number) {
    super(
      `The snapshot is larger than ${maxParts} parts of ${partBytes} bytes (SNAPSHOT_PART_BYTES): raise SNAPSHOT_PART_BYTES.`,
    );
  }
}

/** The table's columns changed between two steps of one file: its parts would not join into one table. */
export class ColumnsChanged extends PermanentFailure {
  override name = "ColumnsChanged";
  constructor() {
    super("The table's columns changed while the snapshot was being written; the next run starts again.");
  }
}

/** A deploy changed what the job writes (SNAPSHOT_JOBS, or a setting its queries read) while a file of the run was being written. */
export class JobChanged extends PermanentFailure {
  override name = "JobChanged";
  constructor() {
    super(
      "The job's definition changed while the snapshot was being written (SNAPSHOT_JOBS, or a setting its queries read, such as MAX_ROWS); the next run writes it as now defined.",
    );
  }
}

/** The bytes a step carried over for the next are gone or cut short: the upload cannot go on. */
export class CarryLost extends PermanentFailure {
  override name = "CarryLost";
}

/** The run no longer holds its job (an operator cancelled it, or it was taken for dead): it writes no more. */
export class RunCancelled extends PermanentFailure {
  override name = "RunCancelled";
  constructor() {
    super("The run was cancelled.");
  }
}

/** A step that failed on its last try, or for good: its message is safe to show (redacted, no internals). */
export class StepFailed extends Error {
  override name = "StepFailed";
}

/** A run that failed for good: thrown out of the Workflow's run, so its instance ends as errored with this reason. */
export class SnapshotRunFailed extends Error {
  override name = "SnapshotRunFailed";
}

/**
 * What a later try may mend: CKAN failing, slow or busy (and its validation answers that lay the
 * fault on its side), this isolate busy or a client with too many requests, a setting an operator
 * may fix meanwhile (a deploy resumes the run), a fault of the worker that may not recur.
 */
const MENDABLE = [
  UpstreamFailure,
  CkanValidationFault,
  IsolateBusy,
  TooManyRequests,
  ClientTooSlow,
  ConfigurationError,
  InternalFault,
];

/**
 * Whether a failure is for good, by its class: one of ours (PermanentFailure), or any other answer
 * of the worker's (HttpError) that says the request is wrong: CKAN refused it (not found, access
 * denied, a value it rejects), or it passes a limit. Anything that is not an answer (R2, the
 * network, a bug) is tried again.
 */
export function isPermanent(error: unknown): boolean {
  if (error instanceof PermanentFailure) return true;
  return error instanceof HttpError && !MENDABLE.some((kind) => error instanceof kind);
}
