// What to paste where: one function per tool, each from the finished link and the chosen options.
// Pure functions (no DOM), so the page and its browser spec read the same rules. Each gives `text`
// to paste, a `note` (good to know) and a `warning` (this choice will not work there as it stands).

/** @typedef {{ format: string, delimiter: string, header: boolean, bom: boolean }} Choice */

const quoteM = (text) => `"${text.replaceAll('"', '""')}"`;
const quotePy = (text) => JSON.stringify(text);
const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/** Google Sheets: IMPORTDATA reads comma- or tab-separated text only. */
export function sheets(link, choice) {
  if (
    choice.format === "json" ||
    choice.format === "ndjson" ||
    choice.format === "xlsx" ||
    choice.format === "parquet"
  ) {
    return {
      text: "",
      note: "",
      warning: "Google Sheets imports CSV or TSV: pick one of those formats for =IMPORTDATA.",
    };
  }
  const text = `=IMPORTDATA(${quoteM(link)})`;
  if (choice.format === "csv" && choice.delimiter !== ",") {
    return {
      text,
      note: "",
      warning: `Google Sheets reads only "," or tab-separated data: with "${choice.delimiter}" every row lands in one column. Use "," (or TSV) for Sheets.`,
    };
  }
  return { text, note: "" };
}

/** Excel Power Query (Data > Get Data > Blank Query > Advanced Editor). */
export function powerQuery(link, choice) {
  if (choice.format === "json") {
    return {
      text: `let\n    Source = Json.Document(Web.Contents(${quoteM(link)})),\n    Rows = Table.FromRecords(Source)\nin\n    Rows`,
      note: "",
    };
  }
  if (choice.format === "ndjson")
    return { text: "", note: "", warning: "Power Query reads CSV, TSV or JSON links; pick one of those." };
  if (choice.format === "parquet") {
    return {
      text: `let\n    Source = Parquet.Document(Binary.Buffer(Web.Contents(${quoteM(link)})))\nin\n    Source`,
      note: "Parquet.Document needs a recent Excel (Microsoft 365); columns arrive typed.",
    };
  }
  if (choice.format === "xlsx") {
    return {
      text: `let\n    Source = Excel.Workbook(Web.Contents(${quoteM(link)}), true),\n    Sheet = Source{0}[Data]\nin\n    Sheet`,
      note: "Or open the downloaded .xlsx in Excel directly: numbers, dates and booleans arrive typed.",
    };
  }
  const delimiter = choice.format === "tsv" ? "#(tab)" : choice.delimiter;
  const source = `Csv.Document(Web.Contents(${quoteM(link)}), [Delimiter=${quoteM(delimiter)}, Encoding=65001, QuoteStyle=QuoteStyle.Csv])`;
  const body = choice.header
    ? `let\n    Source = ${source},\n    Promoted = Table.PromoteHeaders(Source, [PromoteAllScalars=true])\nin\n    Promoted`
    : `let\n    Source = ${source}\nin\n    Source`;
  return { text: body, note: "Encoding 65001 is UTF-8: accents arrive intact." };
}

export function pandas(link, choice) {
  const url = quotePy(link);
  if (choice.format === "json") return { text: `import pandas as pd\n\ndf = pd.read_json(${url})`, note: "" };
  if (choice.format === "ndjson")
    return { text: `import pandas as pd\n\ndf = pd.read_json(${url}, lines=True)`, note: "" };
  if (choice.format === "xlsx")
    return {
      text: `import pandas as pd\n\ndf = pd.read_excel(${url})`,
      note: "pandas reads .xlsx with openpyxl installed.",
    };
  if (choice.format === "parquet") {
    return {
      text: `import pandas as pd\n\ndf = pd.read_parquet(${url})`,
      note: "pandas reads Parquet with pyarrow installed. numeric columns are exact text: pd.to_numeric(df.amount), or add numeric=double to the link.",
    };
  }
  const sep = choice.format === "tsv" ? "\\t" : choice.delimiter;
  const header = choice.header ? "" : ", header=None";
  return {
    text: `import pandas as pd\n\ndf = pd.read_csv(${url}, sep=${quotePy(sep).replace("\\\\t", "\\t")}${header})`,
    note: "",
  };
}

export function r(link, choice) {
  const url = quotePy(link);
  if (choice.format === "json") return { text: `library(jsonlite)\ndf <- fromJSON(${url})`, note: "" };
  if (choice.format === "ndjson") return { text: `library(jsonlite)\ndf <- stream_in(url(${url}))`, note: "" };
  if (choice.format === "xlsx")
    return {
      text: `library(readxl)\ntmp <- tempfile(fileext = ".xlsx")\ndownload.file(${url}, tmp, mode = "wb")\ndf <- read_excel(tmp)`,
      note: "",
    };
  if (choice.format === "parquet") return { text: `library(arrow)\ndf <- read_parquet(${url})`, note: "" };
  const sep = choice.format === "tsv" ? "\\t" : choice.delimiter;
  return {
    text: `df <- read.csv(${url}, sep = "${sep}", header = ${choice.header ? "TRUE" : "FALSE"}, encoding = "UTF-8")`,
    note: "",
  };
}

/** DuckDB (CLI, Python or Node): reads the link itself; Parquet's footer and row groups by Range. */
export function duckdb(link, choice) {
  const url = `'${link.replaceAll("'", "''")}'`;
  if (choice.format === "parquet")
    return {
      text: `SELECT * FROM read_parquet(${url});`,
      note: "Typed columns; json and array columns are JSON (tags::VARCHAR[]), numeric is exact text (CAST(amount AS DECIMAL(18,2))).",
    };
  if (choice.format === "json" || choice.format === "ndjson")
    return { text: `SELECT * FROM read_json(${url});`, note: "" };
  if (choice.format === "xlsx") return { text: "", note: "For DuckDB, pick Parquet: typed columns, read by Range." };
  const delimiter = choice.format === "tsv" ? "\\t" : choice.delimiter;
  return {
    text: `SELECT * FROM read_csv(${url}, delim = '${delimiter}', header = ${choice.header ? "true" : "false"});`,
    note: "Parquet keeps CKAN's column types; CSV leaves DuckDB to guess them.",
  };
}

/** Polars (Python). */
export function polars(link, choice) {
  const url = quotePy(link);
  if (choice.format === "parquet") return { text: `import polars as pl\n\ndf = pl.read_parquet(${url})`, note: "" };
  if (choice.format === "ndjson") return { text: `import polars as pl\n\ndf = pl.read_ndjson(${url})`, note: "" };
  if (choice.format === "json") return { text: `import polars as pl\n\ndf = pl.read_json(${url})`, note: "" };
  if (choice.format === "xlsx") return { text: "", note: "For Polars, pick Parquet: typed columns." };
  const sep = choice.format === "tsv" ? "\\t" : choice.delimiter;
  return {
    text: `import polars as pl\n\ndf = pl.read_csv(${url}, separator="${sep}", has_header=${choice.header ? "True" : "False"})`,
    note: "",
  };
}

export function curl(link, choice, filename) {
  return {
    text: `curl -fL -o ${shellQuote(filename || `export.${choice.format}`)} ${shellQuote(link)}`,
    note: "-f makes curl fail on an error answer instead of saving it.",
  };
}

/** A dashboard: fetch() for JSON, or a Vega-Lite data block. */
export function dashboard(link, choice) {
  if (choice.format === "json") {
    return {
      text: `const rows = await fetch(${quotePy(link)})\n  .then((r) => (r.ok ? r.json() : r.json().then((e) => Promise.reject(new Error(e.error.message)))));\n\n// Vega-Lite\n{ "data": { "url": ${quotePy(link)} } }`,
      note: "",
    };
  }
  if (choice.format === "parquet")
    return {
      text: "",
      note: "",
      warning: 'For a dashboard, pick JSON (or CSV with ","); DuckDB-Wasm reads Parquet in the browser.',
    };
  const type = choice.format === "tsv" ? "tsv" : choice.format === "csv" && choice.delimiter === "," ? "csv" : "";
  if (type === "") return { text: "", note: "", warning: 'For a dashboard, pick JSON (or CSV with ",").' };
  return { text: `// Vega-Lite\n{ "data": { "url": ${quotePy(link)}, "format": { "type": "${type}" } } }`, note: "" };
}

export const SNIPPETS = [
  { id: "sheets", title: "Google Sheets", make: sheets },
  { id: "excel", title: "Excel Power Query (M)", make: powerQuery },
  { id: "pandas", title: "Python (pandas)", make: pandas },
  { id: "polars", title: "Python (Polars)", make: polars },
  { id: "duckdb", title: "DuckDB (SQL)", make: duckdb },
  { id: "r", title: "R", make: r },
  { id: "curl", title: "curl", make: curl },
  { id: "dashboard", title: "Dashboard (fetch / Vega-Lite)", make: dashboard },
];

// ---- a summary (/aggregate.<format>): its columns are named as the link writes them ---------------

/** @typedef {{ groups: Array<{ name: string, label: string, kind: "date" | "text" }>, measures: Array<{ name: string, label: string, kind: "number" | "date" | "text" }> }} Shape */

/** The chart a summary calls for: a line over its first date group, else bars; of its first number measure. */
function plotOf(shape) {
  const date = shape.groups.find((g) => g.kind === "date");
  const other = shape.groups.find((g) => g !== date);
  return { date, other, measure: shape.measures.find((m) => m.kind === "number") ?? shape.measures[0] };
}
const INFINITY_TYPES = { number: "number", date: "timestamp", text: "string" };
const readable = (choice) =>
  choice.format === "json" || choice.format === "tsv" || (choice.format === "csv" && choice.delimiter === ",");

/** Grafana's Infinity data source: the query (its JSON model) with each column typed. */
export function grafana(link, choice, _filename, shape) {
  if (!readable(choice))
    return { text: "", note: "", warning: 'Grafana\'s Infinity reads JSON or CSV with ",": pick one of those.' };
  const columns = [
    ...shape.groups.map((g) => ({ selector: g.name, text: g.label, type: g.kind === "date" ? "timestamp" : "string" })),
    ...shape.measures.map((m) => ({ selector: m.name, text: m.label, type: INFINITY_TYPES[m.kind] })),
  ];
  const query = {
    type: choice.format === "json" ? "json" : choice.format,
    source: "url",
    format: "table",
    url: link,
    url_options: { method: "GET" },
    root_selector: "",
    columns,
  };
  return {
    text: JSON.stringify(query, null, 2),
    note: `In a panel: data source Infinity, Type ${choice.format.toUpperCase()}, Source URL, Format Table, then these columns (or paste this into the query's JSON).${plotOf(shape).date ? " The date column makes it a time series." : ""}`,
  };
}

/** A Vega-Lite spec that reads the link itself. */
export function vegaLite(link, choice, _filename, shape) {
  if (!readable(choice))
    return { text: "", note: "", warning: 'Vega-Lite reads JSON or CSV with ",": pick one of those.' };
  const { date, other, measure } = plotOf(shape);
  const data = { url: link, format: { type: choice.format === "json" ? "json" : choice.format } };
  const y = { field: measure.name, type: "quantitative", title: measure.label };
  let spec;
  if (date) {
    spec = {
      mark: { type: "line", point: true },
      encoding: {
        x: { field: date.name, type: "temporal", title: date.label },
        y,
        ...(other ? { color: { field: other.name, type: "nominal", title: other.label } } : {}),
      },
    };
  } else if (shape.groups.length > 0) {
    const group = shape.groups[0];
    spec = {
      mark: "bar",
      encoding: { y: { field: group.name, type: "nominal", sort: "-x", title: group.label }, x: { ...y } },
    };
  } else {
    spec = { mark: "bar", encoding: { x: { ...y } } };
  }
  return {
    text: JSON.stringify({ $schema: "https://vega.github.io/schema/vega-lite/v5.json", data, ...spec }, null, 2),
    note: "",
  };
}

/** Observable Plot (in a notebook, Framework, or any page that imports it). */
export function observablePlot(link, choice, _filename, shape) {
  if (choice.format !== "json" && !(choice.format === "csv" && choice.delimiter === ","))
    return { text: "", note: "", warning: 'For Observable Plot, pick JSON (or CSV with ",").' };
  const { date, other, measure } = plotOf(shape);
  const field = (name) => JSON.stringify(name);
  const load =
    choice.format === "json"
      ? `const rows = await fetch(${quotePy(link)}).then((r) => r.json());`
      : `const rows = d3.csvParse(await fetch(${quotePy(link)}).then((r) => r.text()), d3.autoType);`;
  let mark;
  if (date) {
    mark = `Plot.lineY(rows, { x: (d) => new Date(d[${field(date.name)}]), y: ${field(measure.name)}${other ? `, stroke: ${field(other.name)}` : ""}, marker: true, tip: true })`;
  } else if (shape.groups.length > 0) {
    mark = `Plot.barX(rows, { y: ${field(shape.groups[0].name)}, x: ${field(measure.name)}, sort: { y: "-x" }, tip: true })`;
  } else {
    mark = `Plot.barX(rows, { x: ${field(measure.name)} })`;
  }
  const zero = date ? "Plot.ruleY([0])" : "Plot.ruleX([0])";
  return {
    text: `${load}\n\nPlot.plot({\n  marginLeft: 120,${date && other ? "\n  color: { legend: true }," : ""}\n  marks: [\n    ${mark},\n    ${zero},\n  ],\n})`,
    note: "",
  };
}

/** pandas, with the date buckets read as dates. */
export function summaryPandas(link, choice, filename, shape) {
  const base = pandas(link, choice, filename);
  if (!base.text) return base;
  const dates = shape.groups.filter((g) => g.kind === "date").map((g) => quotePy(g.name));
  const { date, measure } = plotOf(shape);
  const lines = [base.text];
  if (dates.length > 0 && choice.format !== "parquet" && choice.format !== "xlsx")
    lines.push(...dates.map((d) => `df[${d}] = pd.to_datetime(df[${d}])`));
  if (date) lines.push(`df.plot.line(x=${quotePy(date.name)}, y=${quotePy(measure.name)})`);
  else if (shape.groups.length > 0)
    lines.push(`df.plot.barh(x=${quotePy(shape.groups[0].name)}, y=${quotePy(measure.name)})`);
  return { text: lines.join("\n"), note: base.note };
}

export const SUMMARY_SNIPPETS = [
  { id: "sheets", title: "Google Sheets", make: sheets },
  { id: "grafana", title: "Grafana (Infinity)", make: grafana },
  { id: "vega-lite", title: "Vega-Lite", make: vegaLite },
  { id: "plot", title: "Observable Plot", make: observablePlot },
  { id: "pandas", title: "Python (pandas)", make: summaryPandas },
];
