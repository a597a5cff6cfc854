// The resources the emulator knows. Rows are generated (rows.ts), so a resource is only a size
// and an access rule.

export interface Resource {
  readonly id: string;
  readonly rows: number;
  /** Readable only with the emulator's token; anonymous callers get CKAN's 403. */
  readonly private: boolean;
}

export const EMULATOR_RESOURCES = {
  sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
  private: "60686d2e-91d1-493b-9746-5c5f1b5b118e",
  big: "b16b16b1-0000-4000-8000-000000000001",
} as const;

const RESOURCES: ReadonlyMap<string, Resource> = new Map(
  [
    { id: EMULATOR_RESOURCES.sample, rows: 100_000, private: false },
    { id: EMULATOR_RESOURCES.private, rows: 50, private: true },
    { id: EMULATOR_RESOURCES.big, rows: 1_000_000, private: false },
  ].map((resource) => [resource.id, resource]),
);

export function findResource(id: string): Resource | undefined {
  return RESOURCES.get(id);
}
