import { edgeTable } from "./edge-rows.ts";
import { sampleTable } from "./sample-rows.ts";
import type { Table } from "./schema.ts";

// The resources the emulator knows: an id (the PostgreSQL table name), optional aliases (CKAN
// resolves an alias to the resource id before anything else), an access rule and a generated table.

export interface Resource {
  readonly id: string;
  readonly aliases: readonly string[];
  readonly table: Table;
  /** Readable only with the emulator's token; anonymous callers get CKAN's 403. */
  readonly private: boolean;
  /** What `resource_show` says of it. */
  readonly name: string;
  readonly description: string;
}

export const EMULATOR_RESOURCES = {
  sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
  private: "60686d2e-91d1-493b-9746-5c5f1b5b118e",
  big: "b16b16b1-0000-4000-8000-000000000001",
  /** The edge-case table of the recorded CKAN 2.12 answers; also reachable by its alias "edge". */
  edge: "e1d9e5a7-12c0-4b6e-9a3f-5c2d8e7f4b10",
} as const;

const RESOURCES: readonly Resource[] = [
  { id: EMULATOR_RESOURCES.sample, aliases: [], table: sampleTable(100_000), private: false, name: "Sample grants", description: "100,000 generated grants: amounts, ratios, categories and free text." },
  { id: EMULATOR_RESOURCES.private, aliases: [], table: sampleTable(50), private: true, name: "Private grants", description: "Readable with the API token only." },
  { id: EMULATOR_RESOURCES.big, aliases: [], table: sampleTable(1_000_000), private: false, name: "Big grants", description: "A million rows of the sample's shape." },
  { id: EMULATOR_RESOURCES.edge, aliases: ["edge"], table: edgeTable(), private: false, name: "Edge cases", description: "Every column type and the values real CKAN 2.12 was recorded with." },
];

const BY_NAME: ReadonlyMap<string, Resource> = new Map(
  RESOURCES.flatMap((resource) => [resource.id, ...resource.aliases].map((name) => [name, resource] as const)),
);

/** A resource by id or alias. */
export function findResource(idOrAlias: string): Resource | undefined {
  return BY_NAME.get(idOrAlias);
}
