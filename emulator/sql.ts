import type { OutputType, Version } from "./cells.ts";
import { invalidQuery } from "./error-answers.ts";
import { isOp, SQL_OPS, type Condition, type FilterNode } from "./filters.ts";
import { bindLiteral, sqlLiteral, type PgError } from "./literal.ts";
import { pyStr } from "./py-json.ts";
import type { Table, Value } from "./schema.ts";
import type { RecordsFormat } from "./validate.ts";

// The statement CKAN's search_data would run for a query, kept for what CKAN answers when
// PostgreSQL refuses it: 409 {"query": ["Invalid query"], "info": {"statement": [...],
// "params": [...], "orig": [...]}}. `statement` is the SQL with its bind placeholders (psycopg2
// style, `%` doubled), `params` the bound values, `orig` PostgreSQL's message with the LINE
// excerpt libpq adds. The templates are CKAN's (2.12: as recorded; 2.10: from its source).
// Building the statement also binds the filter values, so a value PostgreSQL cannot read fails
// here, in the order PostgreSQL would meet it.

export interface SelectColumn {
  readonly id: string;
  readonly type: OutputType;
  /** ts_rank(...) for a rank column. */
  readonly rank?: string;
}

export interface SqlQuery {
  readonly version: Version;
  readonly format: RecordsFormat;
  readonly tableId: string;
  readonly table: Table;
  readonly select: readonly SelectColumn[];
  /** `plainto_tsquery('english', 'glacier') "query"`, one per text search. */
  readonly tsQueries: readonly string[];
  readonly filters: FilterNode | undefined;
  /** Text search conditions, after the filters: `_full_text @@ "query"`. */
  readonly textClauses: readonly string[];
  /** ORDER BY expressions; empty for CKAN's default. */
  readonly sort: readonly string[];
  readonly limit: number;
  readonly offset: number;
  readonly distinct: boolean;
  /** 2.12 with include_next_page and a sort on `_id` alone: the direction of next_page. */
  readonly keyset?: "gt" | "lt";
}

export function identifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

// PostgreSQL's reserved words as SQLAlchemy's PostgreSQL dialect lists them: a column of one of these
// names is quoted even when it is lower case.
const RESERVED = new Set(
  (
    "all analyse analyze and any array as asc asymmetric both case cast check collate column constraint create " +
    "current_catalog current_date current_role current_time current_timestamp current_user default deferrable desc " +
    "distinct do else end except false fetch for foreign from grant group having in initially intersect into lateral " +
    "leading limit localtime localtimestamp new not null of off offset old on only or order placing primary references " +
    "returning select session_user some symmetric table then to trailing true union unique user using variadic when " +
    "where window with authorization between binary cross current_schema freeze full ilike inner is isnull join left " +
    "like natural notnull outer over overlaps right similar verbose"
  ).split(" "),
);

/**
 * A column as CKAN 2.11 writes it in a filter clause (SQLAlchemy's `sa.column(name)`): bare when
 * PostgreSQL would read it back unchanged (`id = %(value_0)s`, as recorded), quoted otherwise.
 */
export function columnName(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) && !RESERVED.has(name) ? name : identifier(name);
}

export function literalString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Statement text and query text (the statement with the values written in) grown side by side. */
class Sql {
  statement = "";
  query = "";
  /** 2.11 and 2.12 bind by name (value_0, ...); 2.10 by position. */
  readonly named: Record<string, unknown> = {};
  readonly positional: unknown[] = [];
  /** The first value psycopg2 cannot adapt. */
  clientError: PgError | undefined;

  readonly version: Version;

  constructor(version: Version) {
    this.version = version;
  }

  text(sql: string): void {
    this.statement += sql.replaceAll("%", "%%");
    this.query += sql;
  }

  /** Appends a bound value; returns its offset in the query text. */
  value(value: unknown): number {
    const offset = this.query.length;
    const literal = sqlLiteral(value);
    if (literal === undefined)
      this.clientError ??= { message: `can't adapt type '${Array.isArray(value) ? "list" : "dict"}'`, at: "none" };
    if (this.version !== "2.10") {
      const name = `value_${Object.keys(this.named).length}`;
      this.named[name] = value;
      this.statement += `%(${name})s`;
    } else {
      this.positional.push(value);
      this.statement += "%s";
    }
    this.query += literal ?? "NULL";
    return offset;
  }
}

interface Failure {
  readonly error: PgError;
  /** Offset in the where clause's query text the error points at. */
  readonly offset: number;
}

/** Writes the filter tree as CKAN's SQL and binds its values; returns the bound conditions. */
function writeFilters(sql: Sql, node: FilterNode, table: Table, failures: Failure[]): Condition {
  if (node.kind !== "leaf") {
    const joiner = node.kind === "$and" ? " AND " : " OR ";
    const children: Condition[] = [];
    if (node.children.length === 0) {
      sql.text(node.kind === "$and" ? "true" : "false");
      return { kind: node.kind, children };
    }
    sql.text("(");
    node.children.forEach((child, i) => {
      if (i > 0) sql.text(joiner);
      children.push(writeFilters(sql, child, table, failures));
    });
    sql.text(")");
    return { kind: node.kind, children };
  }
  const column = table.columns[node.column];
  if (column === undefined || !isOp(node.op)) throw new RangeError(`unchecked filter on ${node.field}`);
  const type = column.type;
  // CKAN 2.12 writes str(value) for text columns before binding it.
  const prepare = (raw: unknown): unknown => (sql.version === "2.12" && type === "text" ? pyStr(raw) : raw);
  const bind = (raw: unknown, opOffset: number, valueOffset: number, op: string): Value => {
    const bound = bindLiteral(type, op, raw, sql.version);
    if (bound.ok) return bound.value;
    failures.push({ error: bound.error, offset: bound.error.at === "operator" ? opOffset : valueOffset });
    return null;
  };
  const items = node.op === "in" ? (Array.isArray(node.raw) ? node.raw : [node.raw]).map(prepare) : [];
  if (node.op === "in" && items.length === 0 && sql.version === "2.12") {
    // CKAN 2.12 writes an empty `in` as false; 2.10 writes `in ()`, a syntax error.
    sql.text("false");
    return { kind: "leaf", column: node.column, type, op: "in", values: [] };
  }
  sql.text(`${sql.version === "2.11" ? columnName(node.field) : identifier(node.field)} `);
  const opOffset = sql.query.length;
  if (node.op === "in") {
    sql.text("in (");
    const values: Value[] = [];
    items.forEach((item, i) => {
      if (i > 0) sql.text(",");
      values.push(bind(item, opOffset, sql.value(item), "="));
    });
    if (items.length === 0)
      failures.push({ error: { message: 'syntax error at or near ")"', at: "literal" }, offset: sql.query.length });
    sql.text(")");
    return { kind: "leaf", column: node.column, type, op: "in", values };
  }
  const symbol = SQL_OPS[node.op];
  sql.text(`${symbol} `);
  const raw = prepare(node.raw);
  const value = bind(raw, opOffset, sql.value(raw), symbol);
  return { kind: "leaf", column: node.column, type, op: node.op, values: [value] };
}

/** The SELECT list, as CKAN's datastore_search hook formats each column for the records format. */
function selectColumns(query: SqlQuery): string[] {
  return query.select.map((column) => {
    let fmt = query.format === "lists" ? "coalesce(to_json({0}),'null')" : "{0}";
    if (column.type === "json") {
      fmt = "coalesce(({0}).json,'null')";
    } else if (column.type === "timestamp") {
      fmt =
        query.version === "2.12"
          ? `to_char({0}, 'YYYY-MM-DD"T"HH24:MI:SS.MS')`
          : `to_char({0}, 'YYYY-MM-DD"T"HH24:MI:SS')`;
      if (query.format === "lists") fmt = `coalesce(to_json(${fmt}), 'null')`;
    } else if (column.type === "_text") {
      fmt = "coalesce(array_to_json({0}),'null')";
    }
    if (column.rank !== undefined) return `${fmt.replace("{0}", column.rank)} as ${identifier(column.id)}`;
    const name = identifier(column.id);
    return (query.format === "objects" ? `${fmt} as {0}` : fmt).replaceAll("{0}", name);
  });
}

/** The records statement; `escape` doubles `%` as the statement (not the query sent) shows it. */
function template(query: SqlQuery, select: string, final: string, escape: boolean): string {
  const percent = (text: string) => (escape ? text.replaceAll("%", "%%") : text);
  const resource = percent(identifier(query.tableId));
  const columns = percent(select);
  const ts = query.tsQueries.length > 0 ? percent(`, ${query.tsQueries.join(", ")}`) : "";
  const distinct = query.distinct ? "DISTINCT" : "";
  if (query.version === "2.12") {
    const page = `\n            WITH records_page AS (\n                SELECT * FROM ${resource} ${ts} ${final}\n            )`;
    const next =
      query.keyset === undefined
        ? ""
        : `, next_id AS (\n                SELECT ${query.keyset === "gt" ? "max(_id)" : "min(_id)"} n FROM records_page\n            )`;
    switch (query.format) {
      case "objects":
        return `${page}, select_cols AS (\n                SELECT ${distinct} ${columns} FROM records_page \n            ), json_cols AS (\n                SELECT array_to_json(array_agg(select_cols))::text j\n                FROM select_cols\n            )${next} SELECT json_cols.j${next ? ", next_id.n from json_cols, next_id\n            " : " FROM json_cols"}`;
      case "lists":
        return `${page}, select_cols AS (\n                SELECT ${distinct} '[' || ${columns} || ']' v FROM records_page\n                \n            ), list_cols AS (\n                SELECT '[' || array_to_string(array_agg(select_cols.v), ',') || ']' lc\n                FROM select_cols\n            )${next} SELECT list_cols.lc${next ? ", next_id.n from list_cols, next_id\n            " : " FROM list_cols"}`;
      default:
        return `\n            COPY (\n                WITH records_page AS (\n                    SELECT * FROM ${resource} ${ts} ${final}\n                ) SELECT ${distinct} ${columns} FROM records_page\n            ) TO STDOUT csv${query.format === "tsv" ? " DELIMITER '\t'" : ""}\n        `;
    }
  }
  const inner = `\n                FROM (\n                    SELECT * FROM ${resource} ${ts}\n                    ${final}\n                ) as z`;
  switch (query.format) {
    case "objects":
      return `\n            SELECT array_to_json(array_agg(j))::text FROM (\n                SELECT ${distinct} ${columns}${inner}\n            ) AS j`;
    case "lists":
      return `\n            SELECT '[' || array_to_string(array_agg(j.v), ',') || ']' FROM (\n                SELECT ${distinct} '[' || ${columns} || ']' v${inner}\n            ) AS j`;
    default:
      return `\n            COPY (\n                SELECT ${distinct} ${columns}${inner}\n            ) TO STDOUT csv DELIMITER '${query.format === "tsv" ? "\t" : ","}' `;
  }
}

/**
 * Builds the statement and binds the filters. Returns the bound filter conditions, or throws
 * CKAN's "Invalid query" answer when PostgreSQL (or psycopg2) would refuse the query.
 */
export function buildQuery(query: SqlQuery): Condition | undefined {
  const sql = new Sql(query.version);
  const failures: Failure[] = [];
  let condition: Condition | undefined;
  const filters = query.filters;
  if (filters !== undefined || query.textClauses.length > 0) sql.text("WHERE ");
  if (filters !== undefined && query.version === "2.12") {
    sql.text("(");
    condition = writeFilters(sql, filters, query.table, failures);
    sql.text(")");
  } else if (filters !== undefined && filters.kind !== "leaf") {
    // 2.10: one parenthesised clause per filter key.
    const children: Condition[] = [];
    filters.children.forEach((child, i) => {
      sql.text(i > 0 ? " AND (" : "(");
      children.push(writeFilters(sql, child, query.table, failures));
      sql.text(")");
    });
    condition = { kind: "$and", children };
  }
  query.textClauses.forEach((clause, i) => sql.text(`${i > 0 || filters !== undefined ? " AND " : ""}(${clause})`));

  const sort =
    query.sort.length > 0 ? query.sort : query.distinct ? [] : [query.version === "2.12" ? '"_id" asc' : "_id"];
  const sortClause = sort.length > 0 ? `ORDER BY ${sort.join(", ")}` : "";
  const select = selectColumns(query).join(query.format === "lists" ? " || ',' || " : ", ");
  const finalOf = (where: string) => `${where} ${sortClause} LIMIT ${query.limit} OFFSET ${query.offset}`;
  const statement = template(query, select, finalOf(sql.statement), true);
  const text = template(query, select, finalOf(sql.query), false);
  const whereStart = text.indexOf(finalOf(sql.query));
  const params = query.version === "2.10" ? [sql.positional] : [sql.named];

  const fail = (error: PgError, at?: number): never => {
    let orig = error.message;
    // A server error comes with libpq's LINE excerpt and PostgreSQL's DETAIL and HINT lines.
    if (error.at !== "none") {
      orig += "\n";
      if (at !== undefined) orig += errorPosition(text, at);
      if (error.detail) orig += `DETAIL:  ${error.detail}\n`;
      if (error.hint) orig += `HINT:  ${error.hint}\n`;
    }
    throw invalidQuery(statement, params, orig);
  };

  // psycopg2 writes the values in before anything reaches PostgreSQL.
  if (sql.clientError) fail(sql.clientError);
  // PostgreSQL parses before it analyses: a syntax error wins over any bad value. CKAN's `lists`
  // format writes `... as "rank" || ...` for a rank column, which is not SQL.
  const rank = query.format === "lists" ? query.select.find((column) => column.rank !== undefined) : undefined;
  if (rank !== undefined) {
    const alias = `as ${identifier(rank.id)} `;
    fail({ message: 'syntax error at or near "||"', at: "literal" }, text.indexOf(alias) + alias.length);
  }
  const first = failures.find((failure) => failure.error.message.startsWith("syntax error")) ?? failures[0];
  if (first !== undefined) fail(first.error, whereStart + first.offset);
  return condition;
}

// libpq's reportErrorPosition: the line holding the error, cut to 60 columns around it with "..."
// where cut, and a caret under the error position.
const DISPLAY_SIZE = 60;
const MIN_RIGHT_CUT = 10;

export function errorPosition(query: string, offset: number): string {
  const chars = Array.from(query);
  const loc = Array.from(query.slice(0, offset)).length;
  let line = 1;
  let begin = 0;
  let end = chars.length;
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i];
    if (char === "\t") chars[i] = " ";
    else if (char === "\r" || char === "\n") {
      if (i < loc) {
        if (char === "\r" || i === 0 || chars[i - 1] !== "\r") line++;
        begin = i + 1;
      } else {
        end = i;
        break;
      }
    }
  }
  let beginCut = false;
  let endCut = false;
  if (end - begin > DISPLAY_SIZE) {
    if (begin + DISPLAY_SIZE >= loc + MIN_RIGHT_CUT) {
      end = begin + DISPLAY_SIZE;
      endCut = true;
    } else {
      if (loc + MIN_RIGHT_CUT < end) {
        end = loc + MIN_RIGHT_CUT;
        endCut = true;
      }
      if (end - begin > DISPLAY_SIZE) {
        begin = end - DISPLAY_SIZE;
        beginCut = true;
      }
    }
  }
  const prefix = `LINE ${line}: ${beginCut ? "..." : ""}`;
  const excerpt = chars.slice(begin, end).join("") + (endCut ? "..." : "");
  return `${prefix}${excerpt}\n${" ".repeat(prefix.length + loc - begin)}^\n`;
}
