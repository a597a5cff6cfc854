import { isNumericType } from "./guard.ts";

/**
 * PostgreSQL array literals (`{a,"b c",NULL}`, `{{1,2},{3,4}}`), as COPY writes them, turned into
 * the JSON text CKAN's JSON answers would hold for the same value.
 */
export function pgArrayToJson(literal: string, elementType: string): string {
  const numeric = isNumericType(elementType);
  const boolean = /^bool/i.test(elementType);
  let at = 0;

  const element = (raw: string, quoted: boolean): string => {
    if (!quoted && raw.toUpperCase() === "NULL") return "null";
    if (!quoted && boolean) return raw === "t" ? "true" : raw === "f" ? "false" : JSON.stringify(raw);
    if (!quoted && numeric && Number.isFinite(Number(raw))) return raw;
    return JSON.stringify(raw);
  };

  const list = (): string => {
    at++; // "{"
    const items: string[] = [];
    while (at < literal.length && literal[at] !== "}") {
      if (literal[at] === "{") {
        items.push(list());
      } else if (literal[at] === '"') {
        let value = "";
        for (at++; at < literal.length && literal[at] !== '"'; at++) {
          if (literal[at] === "\\") at++;
          value += literal[at] ?? "";
        }
        at++; // closing quote
        items.push(element(value, true));
      } else {
        const start = at;
        while (at < literal.length && literal[at] !== "," && literal[at] !== "}") at++;
        items.push(element(literal.slice(start, at).trim(), false));
      }
      if (literal[at] === ",") at++;
    }
    at++; // "}"
    return `[${items.join(",")}]`;
  };

  // A dimension decoration (`[1:2]={...}`) only sets bounds; the elements are what matter.
  const brace = literal.indexOf("{");
  if (brace < 0) return JSON.stringify(literal);
  at = brace;
  return list();
}
