// What CKAN reads from a datastore_search_sql statement before PostgreSQL sees it, modelled on the
// Python library it uses (sqlparse): whether it is one statement (`sqlparse.split`), and which
// function names it calls (sqlparse's Function tokens: a name followed by a parenthesis). The
// lexer knows what sqlparse knows: quoted strings, quoted identifiers, comments and keywords.
// Like sqlparse it sees `FILTER (WHERE …)` as a call of a function FILTER (so CKAN refuses it) and
// does not see a call through a quoted name (`"pg_sleep"(1)`), which CKAN's other check (the
// query plan's function scans) only catches in FROM.

type Token = { kind: "word" | "quoted" | "string" | "punct" | "space" | "comment"; text: string };

// One sticky pattern per token kind, tried in order at the current position.
const PATTERNS: readonly (readonly [Token["kind"], RegExp])[] = [
  ["space", /\s+/y],
  ["comment", /--[^\r\n]*/y],
  ["comment", /\/\*[\s\S]*?(?:\*\/|$)/y],
  ["string", /[eE]'(?:[^'\\]|\\[\s\S]|'')*'?/y],
  ["string", /'(?:[^']|'')*'?/y],
  ["quoted", /"(?:[^"]|"")*"?/y],
  ["string", /\$([A-Za-z_]\w*)?\$[\s\S]*?(?:\$\1\$|$)/y],
  ["word", /[\p{L}_][\p{L}\p{N}_$]*/uy],
];

function lex(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    let token: Token | undefined;
    for (const [kind, pattern] of PATTERNS) {
      pattern.lastIndex = i;
      const match = pattern.exec(sql);
      if (match !== null && match[0] !== "") {
        token = { kind, text: match[0] };
        break;
      }
    }
    token ??= { kind: "punct", text: sql[i] ?? "" };
    tokens.push(token);
    i += token.text.length;
  }
  return tokens;
}

/** sqlparse.split: statements end at a `;` outside quotes and comments; blank ones do not count. */
export function isSingleStatement(sql: string): boolean {
  let statements = 0;
  let content = false;
  for (const token of lex(sql)) {
    if (token.kind === "punct" && token.text === ";") {
      statements++;
      content = false;
    } else if (token.kind !== "space") {
      content = true;
    }
  }
  if (content) statements++;
  // A statement that ends with `;` is still one; what follows the first `;` makes a second.
  return statements <= 1;
}

// The words sqlparse lexes as keywords, so that a parenthesis after them (with a space, or for
// these always) is not a call: the ones a SELECT can hold before "(".
const ALWAYS_KEYWORDS = new Set(["CASE", "IN", "VALUES", "USING", "FROM", "AS"]);
const KEYWORDS = new Set([
  "ALL",
  "AND",
  "ANY",
  "ARRAY",
  "ASC",
  "BETWEEN",
  "BY",
  "CROSS",
  "DESC",
  "DISTINCT",
  "ELSE",
  "END",
  "EXCEPT",
  "EXISTS",
  "FULL",
  "GROUP",
  "HAVING",
  "ILIKE",
  "INNER",
  "INTERSECT",
  "IS",
  "JOIN",
  "LATERAL",
  "LEFT",
  "LIKE",
  "LIMIT",
  "NATURAL",
  "NOT",
  "NULL",
  "OFFSET",
  "ON",
  "OR",
  "ORDER",
  "OUTER",
  "OVER",
  "PARTITION",
  "RIGHT",
  "ROW",
  "SELECT",
  "SIMILAR",
  "SOME",
  "THEN",
  "UNION",
  "WHEN",
  "WHERE",
  "WINDOW",
  "WITH",
  "RETURNING",
  "SET",
  "UPDATE",
  "DELETE",
  "INSERT",
  "INTO",
  "TABLE",
]);

/** The names of the functions a statement calls, as sqlparse finds them (first-seen order). */
export function functionNames(sql: string): string[] {
  const tokens = lex(sql).filter((token) => token.kind !== "comment");
  const names: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token?.kind !== "word") continue;
    const upper = token.text.toUpperCase();
    if (ALWAYS_KEYWORDS.has(upper)) continue;
    const next = tokens[i + 1];
    const adjacent = next?.kind === "punct" && next.text === "(";
    const spaced = next?.kind === "space" && tokens[i + 2]?.kind === "punct" && tokens[i + 2]?.text === "(";
    if (adjacent || (spaced && !KEYWORDS.has(upper))) {
      if (!names.includes(token.text)) names.push(token.text);
    }
  }
  return names;
}
