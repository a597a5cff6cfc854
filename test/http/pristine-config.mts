// The production configuration as the project ships it, for the specs: the project's wrangler.toml
// with what `npm run setup` writes taken out (scripts/wrangler-toml.ts), so a checkout whose operator
// has run setup (its CKAN, its aliases, its jobs and crons) runs the same specs, green, as a fresh one.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { withoutProductionVars } from "../../scripts/wrangler-toml.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The operator's file: read here only to be unconfigured, never run as it is. */
export const PROJECT_CONFIG = join(ROOT, "wrangler.toml");

let copies = 0;

export interface ConfigCopy {
  /** Beside the project's wrangler.toml (so `main` and the assets resolve as in the real one); git ignores it. */
  path: string;
  remove(): void;
}

/** A copy of `source` (default: the project's wrangler.toml) with no setup values in it. */
export function pristineProductionConfig(source: string = PROJECT_CONFIG): ConfigCopy {
  const path = join(ROOT, `.wrangler-setup-spec-${process.pid}-${++copies}.toml`);
  writeFileSync(path, withoutProductionVars(readFileSync(source, "utf8")));
  return { path, remove: () => rmSync(path, { force: true }) };
}
