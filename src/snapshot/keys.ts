import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";

/** `YYYYMMDDTHHmmssZ` in UTC: sorts as text in time order and is safe in a URL and a key. */
export function stamp(time: number): string {
  return new Date(time).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}Z$/, "Z");
}

export function stampTime(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return Number.NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

export const datedKey = (job: string, time: string, format: FormatName): string => `${job}/${time}.${FORMATS[format].extension}`;
export const latestKey = (job: string, format: FormatName): string => `${job}/latest.${FORMATS[format].extension}`;
export const manifestKey = (job: string): string => `${job}/manifest.json`;
/** Where a large snapshot is assembled; never served, and replaced by the dated key once whole. */
export const stagingKey = (job: string, time: string, format: FormatName): string => `${job}/.staging/${time}.${FORMATS[format].extension}`;
/** The bytes a run's step `step` left past its last whole part, for the next step (beside the staging key). */
export const carryKey = (staging: string, step: number): string => `${staging}.carry-${step}`;
/** The job's run in progress: who holds the job (one run at a time) and how far it got. Never served. */
export const runKey = (job: string): string => `${job}/.run.json`;

export type SnapshotFile =
  | { kind: "latest"; format: FormatName }
  | { kind: "dated"; stamp: string; format: FormatName }
  | { kind: "manifest" };

/** The file part of `/snapshots/<name>/<file>`, or undefined when it names nothing servable. */
export function parseSnapshotFile(file: string): SnapshotFile | undefined {
  if (file === "manifest.json") return { kind: "manifest" };
  const m = /^(latest|\d{8}T\d{6}Z)\.([a-z]+)$/.exec(file);
  if (!m || !isFormatName(m[2] as string)) return undefined;
  const format = m[2] as FormatName;
  return m[1] === "latest" ? { kind: "latest", format } : { kind: "dated", stamp: m[1] as string, format };
}
