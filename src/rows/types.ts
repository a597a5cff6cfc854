// The row model every layer shares: upstream produces it, encoders consume it.

/** A column as CKAN describes it: id and PostgreSQL type name. */
export interface Column {
  id: string;
  type: string;
  /** The data dictionary's label for the column (CKAN's `fields[].info.label`), when it has one. */
  label?: string;
  /** The data dictionary's description of the column (`fields[].info.notes`), when it has one. */
  description?: string;
}

/**
 * A row: one cell per output column, in column order, each the exact JSON text CKAN wrote for the
 * value (`-0.50`, `"text"`, `["a","b"]`, `null`); undefined where CKAN sent no value. Extra trailing
 * cells are ignored.
 */
export type Row = (string | undefined)[];
