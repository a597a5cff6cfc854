import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";

/** `YYYYMMDDTHHmmssZ` in UTC: sorts as text in time order and is safe in a URL and a key. */
export function stamp(time: number): string {
  return new Date(time)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}Z$/, "Z");
}

export function stampTime(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return Number.NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

export const datedKey = (job: string, time: string, format: FormatName): string =>
  `${job}/${time}.${FORMATS[format].extension}`;
/** Where `latest` was a copy of the newest file; it is the manifest's newest entry now (see serve.ts), and these are deleted. */
export const legacyLatestKey = (job: string, format: FormatName): string =>
  `${job}/latest.${FORMATS[format].extension}`;
export const manifestKey = (job: string): string => `${job}/manifest.json`;
export const datapackageKey = (job: string): string => `${job}/datapackage.json`;
/** Everything a run's format keeps between its steps (never served): the bytes a step carried over. */
export const stagingPrefix = (job: string, time: string, format: FormatName): string =>
  `${job}/.staging/${time}.${FORMATS[format].extension}.`;
/** The bytes step `step` left past its last whole part, for the next step. */
export const carryKey = (job: string, time: string, format: FormatName, step: number): string =>
  `${stagingPrefix(job, time, format)}carry-${step}`;
/** The job's run in progress: who holds the job (one run at a time) and how far it got. Never served. */
export const runKey = (job: string): string => `${job}/.run.json`;

export type SnapshotFile =
  | { kind: "latest"; format: FormatName }
  | { kind: "dated"; stamp: string; format: FormatName }
  | { kind: "manifest" }
  | { kind: "datapackage" };

/** The file part of `/snapshots/<name>/<file>`, or undefined when it names nothing servable. */
export function parseSnapshotFile(file: string): SnapshotFile | undefined {
  if (file === "manifest.json") return { kind: "manifest" };
  if (file === "datapackage.json") return { kind: "datapackage" };
  const m = /^(latest|\d{8}T\d{6}Z)\.([a-z]+)$/.exec(file);
  if (!m || !isFormatName(m[2] as string)) return undefined;
  const format = m[2] as FormatName;
  return m[1] === "latest" ? { kind: "latest", format } : { kind: "dated", stamp: m[1] as string, format };
}
