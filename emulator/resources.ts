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
  /**
   * The data dictionary: what CKAN answers as `info` on each described field of datastore_search.
   * The edge table has none, as the table real CKAN was recorded over had none.
   */
  readonly dictionary?: Readonly<Record<string, ColumnInfo>>;
}

/** A column's data dictionary entry, in the keys and order of CKAN's data dictionary form. */
export interface ColumnInfo {
  readonly label: string;
  readonly notes: string;
  readonly type_override: string;
}

const info = (label: string, notes: string): ColumnInfo => ({ label, notes, type_override: "" });

/** The sample tables' dictionary: every column but `formula` described (an undescribed one shows its id). */
const GRANTS_DICTIONARY: Readonly<Record<string, ColumnInfo>> = {
  id: info("Grant number", "The grant's number in the register."),
  amount: info(
    "Amount (CAD)",
    "Paid, taxes included; negative for a repayment. Kept to the cent, some with more digits than a spreadsheet holds.",
  ),
  ratio: info("Share of budget", "Fraction of the program's budget, a floating-point number."),
  category: info("Program", "The funding program: alpha, beta, gamma, delta or epsilon."),
  name: info("Recipient", "Who received the grant, as written on the application (quotes, line breaks and all)."),
  note: info("Note", "The officer's note."),
  created: info("Approved at", "Date and time of approval, local time."),
  active: info("Active", "Whether payments are still running."),
};

export const EMULATOR_RESOURCES = {
  sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
  private: "60686d2e-91d1-493b-9746-5c5f1b5b118e",
  big: "b16b16b1-0000-4000-8000-000000000001",
  /** The edge-case table of the recorded CKAN 2.12 answers; also reachable by its alias "edge". */
  edge: "e1d9e5a7-12c0-4b6e-9a3f-5c2d8e7f4b10",
} as const;

/** Every resource, in the order the DataStore made their tables. */
export const RESOURCE_LIST: readonly Resource[] = [
  {
    id: EMULATOR_RESOURCES.sample,
    aliases: [],
    table: sampleTable(100_000),
    private: false,
    name: "Sample grants",
    description: "100,000 generated grants: amounts, ratios, categories and free text.",
    dictionary: GRANTS_DICTIONARY,
  },
  {
    id: EMULATOR_RESOURCES.private,
    aliases: [],
    table: sampleTable(50),
    private: true,
    name: "Private grants",
    description: "Readable with the API token only.",
    dictionary: GRANTS_DICTIONARY,
  },
  {
    id: EMULATOR_RESOURCES.big,
    aliases: [],
    table: sampleTable(1_000_000),
    private: false,
    name: "Big grants",
    description: "A million rows of the sample's shape.",
    dictionary: GRANTS_DICTIONARY,
  },
  {
    id: EMULATOR_RESOURCES.edge,
    aliases: ["edge"],
    table: edgeTable(),
    private: false,
    name: "Edge cases",
    description: "Every column type and the values real CKAN 2.12 was recorded with.",
  },
];

const BY_NAME: ReadonlyMap<string, Resource> = new Map(
  RESOURCE_LIST.flatMap((resource) => [resource.id, ...resource.aliases].map((name) => [name, resource] as const)),
);

/** A resource by id or alias. */
export function findResource(idOrAlias: string): Resource | undefined {
  return BY_NAME.get(idOrAlias);
}
