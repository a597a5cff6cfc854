// LibreOffice for specs that open what the worker writes as a spreadsheet user would: headless,
// with a throw-away profile, converting a file to CSV.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

/** LibreOffice's `soffice` (Debian's `libreoffice-calc` or `-nogui`), from SOFFICE_PATH or PATH. */
export function findOffice(): string | undefined {
  const fromEnv = process.env.SOFFICE_PATH;
  if (fromEnv !== undefined && fromEnv !== "") return existsSync(fromEnv) ? fromEnv : undefined;
  const names = ["soffice", "libreoffice"];
  const onPath = (process.env.PATH ?? "").split(delimiter).flatMap((dir) => names.map((name) => join(dir, name)));
  const installed = [
    "/Applications/LibreOffice.app/Contents/MacOS/soffice",
    join(process.env.PROGRAMFILES ?? "C:\\Program Files", "LibreOffice", "program", "soffice.exe"),
  ];
  return [...onPath, ...installed].find((path) => existsSync(path));
}

/** Why a LibreOffice spec cannot run, in one line. */
export const NO_OFFICE =
  "no LibreOffice found (set SOFFICE_PATH, or install it, e.g. apt-get install libreoffice-calc); the LibreOffice specs are skipped";

/** LibreOffice's export filters: UTF-8 CSV, comma-separated, cells as stored (not as formatted); a workbook. */
const TARGETS = {
  csv: "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false",
  xlsx: "xlsx:Calc MS Excel 2007 XML",
} as const;

/**
 * Opens `bytes` (a file named `name`) in LibreOffice and saves it as `target`. `importFilter`: how
 * to read the input when it is CSV (delimiter, locale: a user's own import), e.g.
 * `CSV:59,34,76,1,,1031` for semicolons read with the de-DE locale.
 */
export async function convert(
  name: string,
  bytes: Uint8Array,
  target: keyof typeof TARGETS,
  importFilter?: string,
): Promise<Uint8Array> {
  const office = findOffice();
  if (office === undefined) throw new Error(NO_OFFICE);
  const dir = await mkdtemp(join(tmpdir(), "datastore-export-office-"));
  try {
    const input = join(dir, name);
    await writeFile(input, bytes);
    const args = [
      "--headless",
      "--norestore",
      "--nolockcheck",
      `-env:UserInstallation=${pathToFileURL(join(dir, "profile")).href}`,
      ...(importFilter === undefined ? [] : [`--infilter=${importFilter}`]),
      "--convert-to",
      TARGETS[target],
      "--outdir",
      join(dir, "out"),
      input,
    ];
    await promisify(execFile)(office, args, { timeout: 120_000 });
    return new Uint8Array(await readFile(join(dir, "out", name.replace(/\.[^.]+$/, `.${target}`))));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `convert` to CSV, as text. */
export const convertToCsv = async (name: string, bytes: Uint8Array): Promise<string> =>
  new TextDecoder().decode(await convert(name, bytes, "csv"));
