import { EmulatorError, JSON_CONTENT_TYPE } from "./error-answers.ts";
import { pyDumps, pyJsonString, RawJson } from "./py-json.ts";
import { parseRequest } from "./request.ts";
import { RESOURCE_LIST, type Resource } from "./resources.ts";
import { helpUrl } from "./site.ts";
import { errorPosition } from "./sql.ts";
import { ALLOWED_FUNCTIONS } from "./sql-allowed.ts";
import { SqlError, type SqlEngine, type SqlRows } from "./sql-engine.ts";
import { functionNames, isSingleStatement } from "./sql-parse.ts";
import { jsonValue, NotJsonCompliant } from "./sql-values.ts";

// CKAN's datastore_search_sql (ckanext/datastore/backend/postgres.py, search_sql), step by step as
// CKAN 2.12 takes them, over a real PostgreSQL (sql-engine.ts):
// 1. one statement only (sqlparse.split), else 409 "Query is not a single statement.";
// 2. the statement wrapped as `SELECT * FROM (<sql>) AS blah LIMIT <rows_max + 1> ;`;
// 3. `EXPLAIN (VERBOSE, FORMAT JSON)` of it: PostgreSQL's refusal is a 409 with psycopg2's message
//    (its LINE excerpt quotes the EXPLAIN text, which CKAN then strips where it finds it whole);
//    the plan's relations are the tables read, its function scans functions called;
// 4. a `pg_` table: 403; a table the caller may not read (the private one without the token): 403;
// 5. a function (sqlparse's reading, plus the plan's) not on the allow-list: 403;
// 6. the statement runs; past rows_max rows the answer says records_truncated.
// A value JSON cannot hold (a NaN or infinite float) fails CKAN's JSON writer: HTTP 500, HTML.

const ACTION = "datastore_search_sql";
const EXPLAIN = "EXPLAIN (VERBOSE, FORMAT JSON) ";

export interface SqlSearchOptions {
  readonly engine: () => Promise<SqlEngine>;
  readonly rowsMax: number;
  readonly authorized: boolean;
  /** Told when PostgreSQL took a while to get ready for a statement (its start, a table's load). */
  readonly log?: (line: string) => void;
}

/** Past this, getting the tables ready is worth a line in the log (npm start's first query on `big`). */
const SLOW_LOAD_MS = 1000;

function actionError(status: number, error: Record<string, unknown>): EmulatorError {
  return new EmulatorError(status, { help: helpUrl(ACTION), error, success: false }, JSON.stringify(error));
}

const validation = (error: Record<string, unknown>): EmulatorError =>
  actionError(409, { ...error, __type: "Validation Error" });
const denied = (message: string): EmulatorError =>
  actionError(403, { __type: "Authorization Error", message: `Access denied: ${message}` });

/** CKAN's page for an exception it did not expect (a KeyError, a DataError, a float JSON cannot write). */
export function serverErrorPage(): Response {
  const html =
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n<title>Error [500] - CKAN</title>\n</head>\n' +
    "<body>\n<h1>Internal server error</h1>\n</body>\n</html>\n";
  return new Response(html, { status: 500, headers: { "content-type": "text/html; charset=utf-8" } });
}

export async function searchSql(request: Request, url: URL, options: SqlSearchOptions): Promise<Response> {
  const { params } = await parseRequest(request, url);
  const sql = params["sql"];
  // search_sql reads data_dict['sql'] without a schema: a missing one is a KeyError, a 500.
  if (typeof sql !== "string") return serverErrorPage();
  if (!isSingleStatement(sql)) throw validation({ query: ["Query is not a single statement."] });

  const shown = `SELECT * FROM (${sql.replaceAll("%", "%%")}) AS blah LIMIT ${options.rowsMax + 1} ;`;
  const wrapped = `SELECT * FROM (${sql}) AS blah LIMIT ${options.rowsMax + 1} ;`;
  const started = Date.now();
  const engine = await options.engine();
  const tables = tablesNamed(sql);
  await engine.load(tables, needsFullText(sql));
  const took = Date.now() - started;
  if (took > SLOW_LOAD_MS) {
    const names = tables
      .map((resource) => `${resource.name} (${resource.table.rows.toLocaleString("en")} rows)`)
      .join(", ");
    options.log?.(
      `datastore_search_sql: PostgreSQL (PGlite) ready for ${names || "the statement"} in ${(took / 1000).toFixed(1)} s (a table is loaded once, when a statement first names it)`,
    );
  }

  let plan: SqlRows;
  try {
    plan = await engine.query(EXPLAIN + wrapped);
  } catch (error) {
    return failure(error, EXPLAIN + wrapped, shown);
  }
  const { relations, functions } = readPlan(String(plan.rows[0]?.[0] ?? "[]"));
  if (relations.some((table) => table.startsWith("pg_"))) throw denied("Not authorized to access system tables");
  for (const table of relations) {
    const resource = RESOURCE_LIST.find((candidate) => candidate.id === table);
    if (resource === undefined || (resource.private && !options.authorized))
      throw denied("Not authorized to read resource.");
  }
  const called = functionNames(shown);
  for (const name of [...called, ...functions.filter((name) => !called.includes(name))]) {
    if (!ALLOWED_FUNCTIONS.has(name.toLowerCase()) && !ALLOWED_FUNCTIONS.has(`"${name}"`))
      throw denied(`Not authorized to call function ${name}`);
  }

  let rows: SqlRows;
  try {
    rows = await engine.query(wrapped);
  } catch (error) {
    return failure(error, wrapped, shown);
  }
  try {
    return answer(params, rows, options.rowsMax);
  } catch (error) {
    if (error instanceof NotJsonCompliant) return serverErrorPage();
    throw error;
  }
}

/** CKAN answers with the request's own dict, `records` and `fields` added, `id` and `connection_url` taken out. */
function answer(params: Record<string, unknown>, result: SqlRows, rowsMax: number): Response {
  const truncated = result.rows.length > rowsMax;
  const rows = truncated ? result.rows.slice(0, rowsMax) : result.rows;
  // A Python dict per row: a name given twice keeps its first place and its last value.
  const records = rows.map((row) => {
    const members = new Map<string, string>();
    result.columns.forEach((column, i) => members.set(column.name, jsonValue(column.type, row[i] ?? null)));
    return `{${[...members].map(([name, value]) => `${pyJsonString(name)}: ${value}`).join(", ")}}`;
  });
  const body: Record<string, unknown> = { ...params };
  if (truncated) body["records_truncated"] = true;
  body["records"] = new RawJson(`[${records.join(", ")}]`);
  body["fields"] = result.columns.map((column) => ({ id: column.name, type: column.type }));
  delete body["id"];
  delete body["connection_url"];
  return new Response(pyDumps({ help: helpUrl(ACTION), success: true, result: body }), {
    status: 200,
    headers: { "content-type": JSON_CONTENT_TYPE },
  });
}

/** The resources whose id or alias the statement mentions: the tables to have loaded before it runs. */
function tablesNamed(sql: string): Resource[] {
  const lower = sql.toLowerCase();
  return RESOURCE_LIST.filter((resource) =>
    [resource.id, ...resource.aliases].some((name) => lower.includes(name.toLowerCase())),
  );
}

/** `_full_text` by name, or a `*` that is not count(*): the statement reads the search column. */
function needsFullText(sql: string): boolean {
  return /_full_text/i.test(sql) || /(?<!\(\s*)\*(?!\s*\))/.test(sql);
}

/** What CKAN collects from the plan: every node's relation, and the function of a function scan. */
function readPlan(json: string): { relations: string[]; functions: string[] } {
  const relations: string[] = [];
  const functions: string[] = [];
  const visit = (node: Record<string, unknown>): void => {
    if (typeof node["Relation Name"] === "string" && node["Relation Name"] !== "")
      relations.push(node["Relation Name"]);
    if (typeof node["Function Name"] === "string") functions.push(node["Function Name"]);
    const children = node["Plans"];
    if (Array.isArray(children)) for (const child of children) visit(child as Record<string, unknown>);
  };
  const parsed = JSON.parse(json) as { Plan: Record<string, unknown> }[];
  if (parsed[0] !== undefined) visit(parsed[0].Plan);
  return { relations, functions };
}

// psycopg2's exception per SQLSTATE: the class named in the message, and whether it is a
// ProgrammingError (CKAN's 409) or another DBAPIError (which CKAN lets through: a 500).
const ERROR_CLASSES: Record<string, string> = {
  "42601": "SyntaxError",
  "42703": "UndefinedColumn",
  "42P01": "UndefinedTable",
  "42883": "UndefinedFunction",
  "42803": "GroupingError",
  "42702": "AmbiguousColumn",
  "42804": "DatatypeMismatch",
  "42P10": "InvalidColumnReference",
  "42725": "AmbiguousFunction",
  "42846": "CannotCoerce",
  "42P18": "IndeterminateDatatype",
  "42809": "WrongObjectType",
  "42712": "DuplicateAlias",
  "42701": "DuplicateColumn",
  "42P20": "WindowingError",
  "42P19": "InvalidRecursion",
  "42704": "UndefinedObject",
  "42501": "InsufficientPrivilege",
  "42P09": "AmbiguousAlias",
  "42P08": "AmbiguousParameter",
  "42622": "NameTooLong",
  "42P02": "UndefinedParameter",
  "21000": "CardinalityViolation",
  "42602": "InvalidName",
  "42939": "ReservedName",
  "42P11": "InvalidCursorDefinition",
  "0A000": "FeatureNotSupported",
};

function isProgrammingError(code: string): boolean {
  return /^(42|21|20|3D|3F|44)/.test(code);
}

/** PostgreSQL's refusal as CKAN reports it (409), or CKAN's 500 for what it does not catch. */
function failure(error: unknown, executed: string, shown: string): Response {
  if (!(error instanceof SqlError)) throw error;
  if (error.code === "42501") throw denied("Not authorized to read resource.");
  if (error.code === "57014") throw validation({ query: ["Query took too long"] });
  if (!isProgrammingError(error.code)) return serverErrorPage();
  let orig = `${error.message}\n`;
  if (error.position !== undefined) orig += errorPosition(executed, utf16Offset(executed, error.position - 1));
  if (error.detail !== undefined) orig += `DETAIL:  ${error.detail}\n`;
  if (error.hint !== undefined) orig += `HINT:  ${error.hint}\n`;
  const statement = executed.startsWith(EXPLAIN) ? EXPLAIN + shown : shown;
  const className = ERROR_CLASSES[error.code] ?? "ProgrammingError";
  const full = `(psycopg2.errors.${className}) ${orig}\n[SQL: ${statement}]\n(Background on this error at: https://sqlalche.me/e/20/f405)`;
  throw validation({
    query: [removeExplain(full)],
    info: { statement: [removeExplain(statement)], params: [{}], orig: [removeExplain(orig)] },
  });
}

function removeExplain(text: string): string {
  return text.replaceAll(EXPLAIN, "").replaceAll("EXPLAIN ", "");
}

/** PostgreSQL counts characters; JavaScript strings count UTF-16 units. */
function utf16Offset(text: string, characters: number): number {
  let offset = 0;
  for (let n = 0; n < characters && offset < text.length; n++)
    offset += (text.codePointAt(offset) ?? 0) > 0xffff ? 2 : 1;
  return offset;
}
