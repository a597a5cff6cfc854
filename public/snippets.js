// What to paste where: one function per tool, each from the finished link and the chosen options.
// Pure functions (no DOM), so the page and its browser spec read the same rules. Each gives `text`
// to paste, a `note` (good to know) and a `warning` (this choice will not work there as it stands).

/** @typedef {{ format: string, delimiter: string, header: boolean, bom: boolean }} Choice */

const quoteM = (text) => `"${text.replaceAll('"', '""')}"`;
const quotePy = (text) => JSON.stringify(text);
const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/** Google Sheets: IMPORTDATA reads comma- or tab-separated text only. */
export function sheets(link, choice) {
  if (choice.format === "json" || choice.format === "ndjson" || choice.format === "xlsx") {
    return { text: "", note: "", warning: "Google Sheets imports CSV or TSV: pick one of those formats for =IMPORTDATA." };
  }
  const text = `=IMPORTDATA(${quoteM(link)})`;
  if (choice.format === "csv" && choice.delimiter !== ",") {
    return { text, note: "", warning: `Google Sheets reads only "," or tab-separated data: with "${choice.delimiter}" every row lands in one column. Use "," (or TSV) for Sheets.` };
  }
  return { text, note: "" };
}

/** Excel Power Query (Data > Get Data > Blank Query > Advanced Editor). */
export function powerQuery(link, choice) {
  if (choice.format === "json") {
    return { text: `let\n    Source = Json.Document(Web.Contents(${quoteM(link)})),\n    Rows = Table.FromRecords(Source)\nin\n    Rows`, note: "" };
  }
  if (choice.format === "ndjson") return { text: "", note: "", warning: "Power Query reads CSV, TSV or JSON links; pick one of those." };
  if (choice.format === "xlsx") {
    return { text: `let\n    Source = Excel.Workbook(Web.Contents(${quoteM(link)}), true),\n    Sheet = Source{0}[Data]\nin\n    Sheet`, note: "Or open the downloaded .xlsx in Excel directly: numbers, dates and booleans arrive typed." };
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
  if (choice.format === "ndjson") return { text: `import pandas as pd\n\ndf = pd.read_json(${url}, lines=True)`, note: "" };
  if (choice.format === "xlsx") return { text: `import pandas as pd\n\ndf = pd.read_excel(${url})`, note: "pandas reads .xlsx with openpyxl installed." };
  const sep = choice.format === "tsv" ? "\\t" : choice.delimiter;
  const header = choice.header ? "" : ", header=None";
  return { text: `import pandas as pd\n\ndf = pd.read_csv(${url}, sep=${quotePy(sep).replace("\\\\t", "\\t")}${header})`, note: "" };
}

export function r(link, choice) {
  const url = quotePy(link);
  if (choice.format === "json") return { text: `library(jsonlite)\ndf <- fromJSON(${url})`, note: "" };
  if (choice.format === "ndjson") return { text: `library(jsonlite)\ndf <- stream_in(url(${url}))`, note: "" };
  if (choice.format === "xlsx") return { text: `library(readxl)\ntmp <- tempfile(fileext = ".xlsx")\ndownload.file(${url}, tmp, mode = "wb")\ndf <- read_excel(tmp)`, note: "" };
  const sep = choice.format === "tsv" ? "\\t" : choice.delimiter;
  return { text: `df <- read.csv(${url}, sep = "${sep}", header = ${choice.header ? "TRUE" : "FALSE"}, encoding = "UTF-8")`, note: "" };
}

export function curl(link, choice, filename) {
  return { text: `curl -fL -o ${shellQuote(filename || `export.${choice.format}`)} ${shellQuote(link)}`, note: "-f makes curl fail on an error answer instead of saving it." };
}

/** A dashboard: fetch() for JSON, or a Vega-Lite data block. */
export function dashboard(link, choice) {
  if (choice.format === "json") {
    return {
      text: `const rows = await fetch(${quotePy(link)})\n  .then((r) => (r.ok ? r.json() : r.json().then((e) => Promise.reject(new Error(e.error.message)))));\n\n// Vega-Lite\n{ "data": { "url": ${quotePy(link)} } }`,
      note: "",
    };
  }
  const type = choice.format === "tsv" ? "tsv" : choice.format === "csv" && choice.delimiter === "," ? "csv" : "";
  if (type === "") return { text: "", note: "", warning: "For a dashboard, pick JSON (or CSV with \",\")." };
  return { text: `// Vega-Lite\n{ "data": { "url": ${quotePy(link)}, "format": { "type": "${type}" } } }`, note: "" };
}

export const SNIPPETS = [
  { id: "sheets", title: "Google Sheets", make: sheets },
  { id: "excel", title: "Excel Power Query (M)", make: powerQuery },
  { id: "pandas", title: "Python (pandas)", make: pandas },
  { id: "r", title: "R", make: r },
  { id: "curl", title: "curl", make: curl },
  { id: "dashboard", title: "Dashboard (fetch / Vega-Lite)", make: dashboard },
];
