// The link builder: reads /resources, /resources/<alias> and /openapi.json from this worker, keeps
// the user's choices in `state`, and after every change rebuilds the link, the snippets and (debounced)
// the preview. No framework: the page is small, and works offline with `npm start`.
import { cellText, countText, EXACT_NUMBERS, parseExact } from "./exact-json.js";
import { showHealth } from "./health.js";
import { chartModel, drawChart } from "./chart.js";
import { SNIPPETS, SUMMARY_SNIPPETS } from "./snippets.js";

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

const state = {
  /** Kept in memory only: never stored, never put in a URL. */
  adminToken: "",
  signing: false,
  resource: undefined,
  /** Column ids in export order; empty: every column. */
  fields: [],
  filters: [],
  format: "csv",
  /** CKAN's count of rows matching the current filters (from the last preview); undefined while counting. */
  total: undefined,
  /** True from picking a table until its columns arrived: nothing shown may belong to the last table. */
  loading: true,
  /** The tool whose snippet is open (the others stay collapsed). */
  tool: "sheets",
  /** "rows" (/export.<format>) or "summary" (/aggregate.<format>). */
  mode: "rows",
  /** The summary's group columns: { column, bucket } with bucket "", "year", "month" or "day". */
  groups: [],
  /** The summary's measures: { fn, column } with fn one of MEASURES' keys. */
  measures: [{ fn: "count", column: "" }],
};
const PREVIEW_ROWS = 20;
/** Each format as its own documentation writes it. */
const FORMAT_NAMES = { csv: "CSV", tsv: "TSV", xlsx: "XLSX", json: "JSON", ndjson: "NDJSON", parquet: "Parquet" };
const RANGE_TYPES = /^(int|int2|int4|int8|numeric|float4|float8|date|timestamp|timestamptz)$/;
const NUMERIC_TYPES = /^(int|int2|int4|int8|numeric|float4|float8)$/;
/** Columns a summary buckets by year, month or day (the worker's date and timestamp kinds). */
const DATE_TYPES = /^(date|timestamp)$/;
const TEXT_TYPES = /^(text|varchar|bpchar|char|name|citext|uuid)$/;
/** What min and max take: numbers, text, dates and timestamps. */
const ordered = (c) => NUMERIC_TYPES.test(c.type) || TEXT_TYPES.test(c.type) || DATE_TYPES.test(c.type);
/** The summary fetches this many groups at most for its table and chart. */
const CHART_ROWS = 200;
/** What a measure computes, as the page words it; `of` the columns it takes (none for count). */
const MEASURES = {
  count: { text: "count rows", of: () => false },
  countf: { text: "count values", of: () => true },
  sum: { text: "sum", of: (c) => NUMERIC_TYPES.test(c.type) },
  avg: { text: "average", of: (c) => NUMERIC_TYPES.test(c.type) },
  min: { text: "min", of: ordered },
  max: { text: "max", of: ordered },
};
/** Columns a summary may group or measure: json (and arrays) have no order or sum. */
const summable = (column) => !/^(json|jsonb)$/.test(column.type) && !column.type.startsWith("_");

function authHeaders() {
  return state.adminToken ? { authorization: `Bearer ${state.adminToken}` } : {};
}

async function getJson(path) {
  const response = await fetch(path, { headers: { accept: "application/json", ...authHeaders() } });
  const body = await response
    .text()
    .then(parseExact)
    .catch(() => ({}));
  if (!response.ok)
    throw Object.assign(new Error(body.error?.message ?? `HTTP ${response.status}`), { status: response.status });
  return body;
}

// ---- the link -------------------------------------------------------------------------------------

/** The rows a link reads: the table, its search and its filters (before any summary). */
function tableParams() {
  const params = [["resource", state.resource.name]];
  const q = $("q").value.trim();
  if (q) params.push(["q", q]);
  for (const filter of state.filters) {
    if (filter.column === "" || filter.value === "") continue;
    params.push([
      filter.op === "eq" ? `filter.${filter.column}` : `filter.${filter.column}[${filter.op}]`,
      filter.value,
    ]);
  }
  return params;
}

function exportParams({ preview = false } = {}) {
  if (state.mode === "summary") return summaryParams({ preview });
  const params = tableParams();
  if (state.fields.length > 0) params.splice(1, 0, ["fields", state.fields.join(",")]);
  const sort = $("sort-column").value;
  if (sort) params.push(["sort", $("sort-direction").value ? `${sort} ${$("sort-direction").value}` : sort]);
  const limit = $("limit").value.trim();
  const offset = $("offset").value.trim();
  if (preview) params.push(["limit", String(Math.min(PREVIEW_ROWS, limit === "" ? PREVIEW_ROWS : Number(limit)))]);
  else if (limit !== "") params.push(["limit", limit]);
  if (offset !== "" && offset !== "0") params.push(["offset", offset]);
  if (preview) return params;
  return [...params, ...formatParams()];
}

/** /aggregate's parameters: group_by and measures named as the output columns will be. */
function summaryParams({ preview = false } = {}) {
  const params = tableParams();
  const groups = summaryGroups();
  if (groups.length > 0) params.push(["group_by", groups.map((g) => g.name).join(",")]);
  params.push([
    "measures",
    summaryMeasures()
      .map((m) => m.name)
      .join(","),
  ]);
  const sort = $("summary-sort").value;
  const direction = $("summary-direction").value;
  if (sort) params.push(["sort", direction ? `${sort} ${direction}` : sort]);
  const limit = $("summary-limit").value.trim();
  if (preview)
    params.push([
      "limit",
      String(Math.min(CHART_ROWS, limit === "" || !/^\d+$/.test(limit) ? CHART_ROWS : Number(limit))),
    ]);
  else if (limit !== "") params.push(["limit", limit]);
  if (preview) return params;
  return [...params, ...formatParams()];
}

/** What the chosen format's options add to a link. */
function formatParams() {
  const params = [];
  if (state.format === "csv" || state.format === "tsv") {
    if (state.format === "csv" && $("delimiter").value !== ",") params.push(["delimiter", $("delimiter").value]);
    if (!$("header").checked) params.push(["header", "0"]);
    else if ($("labels").checked) params.push(["header", "label"]);
    if ($("bom").checked) params.push(["bom", "1"]);
    if (!$("formula-guard").checked) params.push(["formula_guard", "0"]);
    if (!$("decimal").disabled && $("decimal").checked) params.push(["decimal", ","]);
  }
  if ((state.format === "xlsx" || state.format === "parquet") && $("labels").checked) params.push(["header", "label"]);
  const filename = $("filename").value.trim();
  if (filename) params.push(["filename", filename]);
  return params;
}

const encode = (text) => encodeURIComponent(text).replaceAll("%2C", ",");
/** The link's path: rows from /export, a summary from /aggregate. ( and ) stay as typed: `sum(amount)`. */
const pathOf = (format, params) =>
  `/${state.mode === "summary" ? "aggregate" : "export"}.${format}?${params.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&")}`;

/** POST /links: only with signing on, as an operator. */
async function sign(path, expiresIn) {
  const response = await fetch("/links", {
    method: "POST",
    headers: { "content-type": "application/json", ...authHeaders() },
    body: JSON.stringify({ link: path, ...(expiresIn ? { expires_in: Number(expiresIn) } : {}) }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error?.message ?? `HTTP ${response.status}`);
  return body.link;
}

/**
 * Why the worker would refuse this link, known before anyone uses it: a limit above the worker's
 * MAX_ROWS, or no limit while more rows than that match (the count comes with the preview).
 */
function linkWarnings() {
  if (state.mode === "summary") return [];
  const max = state.resource.max_rows;
  if (typeof max !== "number") return [];
  const limit = $("limit").value.trim();
  const most = `this worker exports at most ${max.toLocaleString("en")} rows at once: the link would answer 400`;
  if (limit === "") {
    if (state.total === undefined || state.total <= max) return [];
    return [
      `${state.total.toLocaleString("en")} rows match and there is no limit, but ${most}. Set a limit of ${max} or less, add filters, or export in parts with offset.`,
    ];
  }
  if (!/^\d+$/.test(limit)) return ["The limit must be a whole number, 0 or more: the link would answer 400."];
  if (BigInt(limit) <= BigInt(max)) return [];
  return [
    `The link asks for up to ${BigInt(limit).toLocaleString("en")} rows, but ${most}. Set a limit of ${max} or less, and export the rest in parts with offset.`,
  ];
}

function renderLinkWarnings() {
  const warnings = linkWarnings();
  $("link-warnings").replaceChildren(...warnings.map((w) => el("li", { textContent: w })));
  $("link").ariaInvalid = String(warnings.length > 0);
}

// ---- output ---------------------------------------------------------------------------------------

function renderOutput(link) {
  $("link").value = link;
  $("link").disabled = link === "";
  $("copy-link").disabled = link === "";
  const choice = {
    format: state.format,
    delimiter: $("delimiter").value,
    header: $("header").checked,
    bom: $("bom").checked,
  };
  const box = $("snippets");
  // The open snippet as the page shows it: a toggle event comes a task after the click, and a redraw
  // in between (the preview settling) would otherwise reopen the tool before it.
  const shown = box.querySelector("details[open]");
  if (shown instanceof HTMLElement && shown.dataset.tool) state.tool = shown.dataset.tool;
  box.replaceChildren();
  if (link === "") return;
  const summary = state.mode === "summary";
  const list = summary ? SUMMARY_SNIPPETS : SNIPPETS;
  const shape = summary ? { groups: summaryGroups(), measures: summaryMeasures() } : undefined;
  if (!list.some((snippet) => snippet.id === state.tool)) state.tool = list[0].id;
  for (const snippet of list) {
    const { text, note, warning } = snippet.make(link, choice, $("filename").value.trim(), shape);
    const id = `snippet-${snippet.id}`;
    // One tool's snippet open at a time (an exclusive group of <details>): the page stays short.
    const part = el(
      "details",
      { className: "snippet", name: "tool", open: snippet.id === state.tool },
      el("summary", {}, el("h3", { textContent: snippet.title, id: `${id}-title` })),
    );
    part.dataset.tool = snippet.id;
    part.addEventListener("toggle", () => {
      if (part.open) state.tool = snippet.id;
      else if (state.tool === snippet.id) state.tool = "";
    });
    if (warning) part.append(el("p", { className: "warning", textContent: warning }));
    if (note) part.append(el("p", { className: "note", textContent: note }));
    if (text) {
      part.append(el("pre", { id, textContent: text, tabIndex: 0, ariaLabel: snippet.title }));
      part.append(el("button", { type: "button", className: "copy", textContent: `Copy ${snippet.title}` }));
      part.lastChild.dataset.copy = id;
    }
    box.append(part);
  }
}

/**
 * While a table's columns load, nothing on the page may still show the last table's link, count or
 * preview: the link box and its Copy are emptied and disabled, the count says it is loading.
 */
function showLoading(what) {
  state.loading = true;
  // A preview scheduled or on its way for the last table must not land afterwards.
  clearTimeout(previewTimer);
  previewRun++;
  state.total = undefined;
  renderOutput("");
  $("link").placeholder = what;
  $("link-warnings").replaceChildren();
  $("link").ariaInvalid = "false";
  markCounting(what);
  $("warnings").replaceChildren();
  renderTable([], []);
}

/** The count belongs to the last preview: marked (and not trusted) until the next one answers. */
function markCounting(text) {
  const count = $("count");
  count.dataset.state = "loading";
  count.ariaBusy = "true";
  delete count.dataset.total;
  count.textContent = text;
}

function refreshLink() {
  if (!state.resource || state.loading) return;
  // A signed link is made on request (Sign the link): an unsigned one would only get a 403.
  renderOutput(state.signing ? "" : location.origin + pathOf(state.format, exportParams()));
  $("link").placeholder = state.signing ? "Choose an expiry and press Sign the link" : "";
  // The last count answered for the last link: no warning is drawn from it until the next one.
  state.total = undefined;
  renderLinkWarnings();
  renderSortNote();
  markCounting(state.mode === "summary" ? "Summarizing…" : "Counting matching rows…");
  schedulePreview();
}

/** A descending sort puts empty values first (PostgreSQL's order): the page says so where it is chosen. */
function renderSortNote() {
  const column = $("sort-column").value;
  $("sort-direction").disabled = column === "";
  $("summary-direction").disabled = $("summary-sort").value === "";
  const picked = state.resource.columns.find((c) => c.id === column);
  const note = $("sort-note");
  const direction = $("sort-direction").value;
  note.hidden = !(state.mode === "rows" && picked && direction !== "");
  // Descending is `nulls last` unless asked otherwise: the largest values first, not the empty ones.
  if (!note.hidden) {
    const name = picked.label ?? picked.id;
    note.textContent =
      direction === "desc"
        ? `Descending with empty values first (PostgreSQL's order): rows whose ${name} is empty come before the largest values.`
        : `Descending with empty values last (sort=… desc nulls last): the largest ${name} first, rows where it is empty at the end.`;
  }
  const output = [...summaryGroups(), ...summaryMeasures()].find((o) => o.name === $("summary-sort").value);
  const summaryNote = $("summary-sort-note");
  const summaryDirection = $("summary-direction").value;
  summaryNote.hidden = !(state.mode === "summary" && output && summaryDirection !== "");
  if (!summaryNote.hidden)
    summaryNote.textContent =
      summaryDirection === "desc"
        ? `Descending with empty values first (PostgreSQL's order): groups whose ${output.label} is empty come before the largest.`
        : `Descending with empty values last (sort=… desc nulls last): the largest ${output.label} first, groups where it is empty at the end.`;
}

document.addEventListener("click", async (event) => {
  const target = event.target;
  if (!(target instanceof HTMLButtonElement) || !target.dataset.copy) return;
  const source = $(target.dataset.copy);
  const field = source instanceof HTMLInputElement || source instanceof HTMLTextAreaElement;
  const text = field ? source.value : source.textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard (an http page other than localhost): select it for Ctrl+C instead.
    if (field) source.select();
  }
  const label = target.textContent;
  target.textContent = "Copied";
  setTimeout(() => (target.textContent = label), 1200);
});

// ---- preview --------------------------------------------------------------------------------------

let previewTimer;
let previewRun = 0;
function schedulePreview() {
  clearTimeout(previewTimer);
  // A preview still on its way answers for the state before this change: it must not land.
  previewRun++;
  previewTimer = setTimeout(preview, 300);
}

async function preview() {
  if (state.mode === "summary") return previewSummary();
  const run = ++previewRun;
  const warnings = [];
  let path = pathOf("json", exportParams({ preview: true }));
  try {
    if (state.signing) path = await sign(path);
    const response = await fetch(path, { headers: { accept: "application/json" } });
    const body = parseExact(await response.text());
    if (run !== previewRun) return;
    if (!response.ok) {
      $("count").textContent = "This link would fail:";
      $("count").dataset.state = "failed";
      $("count").ariaBusy = "false";
      warnings.push(body.error?.message ?? `HTTP ${response.status}`);
      renderTable([], []);
    } else {
      const total = Number(response.headers.get("x-total-count"));
      $("count").textContent = `${total.toLocaleString("en")} matching rows`;
      $("count").dataset.total = String(total);
      $("count").dataset.state = "done";
      $("count").ariaBusy = "false";
      state.total = total;
      renderLinkWarnings();
      warnings.push(...linkWarnings());
      if (!EXACT_NUMBERS)
        warnings.push(
          "This browser rounds numbers of more than 15 digits in the preview; the export keeps CKAN's text.",
        );
      renderTable(body.length > 0 ? Object.keys(body[0]) : state.fields, body, headingOf);
    }
  } catch (error) {
    if (run !== previewRun) return;
    $("count").textContent = "No preview:";
    $("count").dataset.state = "failed";
    $("count").ariaBusy = "false";
    warnings.push(String(error.message ?? error));
  }
  $("warnings").replaceChildren(...warnings.map((w) => el("li", { textContent: w })));
  $("preview").dataset.ready = String(run);
}

/** The summary's preview: its first groups as a table, and all fetched (up to CHART_ROWS) as a chart. */
async function previewSummary() {
  const run = ++previewRun;
  const warnings = [];
  let path = pathOf("json", exportParams({ preview: true }));
  let rows = [];
  try {
    if (state.signing) path = await sign(path);
    const response = await fetch(path, { headers: { accept: "application/json" } });
    const body = parseExact(await response.text());
    if (run !== previewRun) return;
    if (!response.ok) {
      $("count").textContent = "This link would fail:";
      $("count").dataset.state = "failed";
      warnings.push(body.error?.message ?? `HTTP ${response.status}`);
    } else {
      rows = body;
      // X-Total-Count: the groups before limit; the link's own top N, if any, keeps fewer.
      const header = response.headers.get("x-total-count");
      const groups = header === null ? rows.length : Number(header);
      const limit = $("summary-limit").value.trim();
      const kept = /^\d+$/.test(limit) ? Math.min(groups, Number(limit)) : groups;
      const more = kept > rows.length;
      const top = kept < groups ? `top ${kept.toLocaleString("en")} of ` : "";
      $("count").textContent =
        `${top}${groups.toLocaleString("en")} ${groups === 1 ? "group" : "groups"}${rows.length > PREVIEW_ROWS ? `, the first ${PREVIEW_ROWS} shown` : ""}`;
      $("count").dataset.total = String(groups);
      $("count").dataset.state = "done";
      const by = response.headers.get("x-aggregated-by");
      if (by) $("count").title = by === "ckan-sql" ? "Computed by the portal's database" : "Computed by the worker";
      if (more)
        warnings.push(
          `The chart shows the first ${CHART_ROWS} groups: set a top (limit), or fewer groups, to see them all.`,
        );
      if (!EXACT_NUMBERS)
        warnings.push(
          "This browser rounds numbers of more than 15 digits in the preview; the export keeps CKAN's text.",
        );
    }
  } catch (error) {
    if (run !== previewRun) return;
    $("count").textContent = "No preview:";
    $("count").dataset.state = "failed";
    warnings.push(String(error.message ?? error));
  }
  $("count").ariaBusy = "false";
  const names = [...summaryGroups(), ...summaryMeasures()];
  const labels = new Map(names.map((n) => [n.name, n.label]));
  renderTable(
    rows.length > 0 ? Object.keys(rows[0]) : names.map((n) => n.name),
    rows.slice(0, PREVIEW_ROWS),
    (name) => ({ text: labels.get(name) ?? name, id: name }),
  );
  chartRows = rows;
  renderChart(rows);
  $("warnings").replaceChildren(...warnings.map((w) => el("li", { textContent: w })));
  $("preview").dataset.ready = String(run);
}

/** The rows of the last summary preview, drawn again when another measure is charted. */
let chartRows = [];
function renderChart(rows) {
  const measures = summaryMeasures().filter((m) => m.kind === "number");
  const box = $("chart-box");
  box.hidden = state.mode !== "summary" || rows.length === 0 || measures.length === 0;
  if (box.hidden) return $("chart").replaceChildren();
  const select = $("chart-measure");
  const kept = select.value;
  select.replaceChildren(
    ...measures.map((m) => el("option", { value: m.name, textContent: m.label, selected: m.name === kept })),
  );
  const measure = measures.find((m) => m.name === select.value) ?? measures[0];
  const model = chartModel(rows, summaryGroups(), measure);
  const parts = [drawChart(model, $("chart").clientWidth || 640)];
  if (model.left_out > 0)
    parts.push(
      el("figcaption", {
        className: "muted",
        textContent:
          model.kind === "line"
            ? `${model.left_out} more lines not drawn.`
            : `${model.left_out} more groups not drawn.`,
      }),
    );
  $("chart").replaceChildren(...parts);
}

/** A table column's heading: its label where the data dictionary has one, as the picker shows it. */
function headingOf(id) {
  const column = state.resource?.columns.find((c) => c.id === id);
  return { text: column?.label ?? id, id };
}

function renderTable(columns, rows, heading = (id) => ({ text: id, id })) {
  const head = el(
    "tr",
    {},
    ...columns.map((c) => {
      const { text, id } = heading(c);
      // The id on hover where the label differs.
      const th = el("th", { scope: "col", textContent: text });
      if (id !== text) th.title = id;
      return th;
    }),
  );
  $("preview").tHead.replaceChildren(head);
  $("preview").tBodies[0].replaceChildren(
    ...rows.map((row) => el("tr", {}, ...columns.map((c) => el("td", { textContent: cellText(row[c]) })))),
  );
}

// ---- columns and filters --------------------------------------------------------------------------

function renderColumns() {
  const columns = state.resource.columns;
  const ordered = [
    ...state.fields.map((id) => columns.find((c) => c.id === id)),
    ...columns.filter((c) => !state.fields.includes(c.id)),
  ];
  $("columns").replaceChildren(
    ...ordered.map((column) => {
      const checked = state.fields.includes(column.id);
      const box = el("input", { type: "checkbox", checked, id: `col-${column.id}` });
      box.addEventListener("change", () => {
        state.fields = box.checked ? [...state.fields, column.id] : state.fields.filter((f) => f !== column.id);
        renderColumns();
        refreshLink();
      });
      const move = (delta, text) => {
        const button = el("button", {
          type: "button",
          textContent: text,
          disabled: !checked,
          ariaLabel: `Move ${column.id} ${delta < 0 ? "up" : "down"}`,
        });
        button.addEventListener("click", () => {
          const i = state.fields.indexOf(column.id);
          const j = i + delta;
          if (j < 0 || j >= state.fields.length) return;
          [state.fields[i], state.fields[j]] = [state.fields[j], state.fields[i]];
          renderColumns();
          $(`col-${column.id}`).focus();
          refreshLink();
        });
        return button;
      };
      const title = column.label ? `${column.label} (${column.id})` : column.id;
      const label = el(
        "label",
        { htmlFor: box.id, title: column.description ?? "" },
        box,
        title,
        el("span", { className: "type", textContent: column.type }),
      );
      return el("li", {}, label, move(-1, "↑"), move(1, "↓"));
    }),
  );
}

// ---- the summary: group columns and measures ------------------------------------------------------

const columnOf = (id) => state.resource.columns.find((c) => c.id === id);
const labelOf = (id) => columnOf(id)?.label ?? id;

/** The complete group columns, named as the link and the answer's columns name them. */
function summaryGroups() {
  const complete = state.groups
    .filter((g) => g.column !== "" && columnOf(g.column))
    .map((g) => ({
      name: g.bucket ? `${g.bucket}(${g.column})` : g.column,
      label: g.bucket ? `${labelOf(g.column)} (${g.bucket})` : labelOf(g.column),
      kind: g.bucket || DATE_TYPES.test(columnOf(g.column).type) ? "date" : "text",
    }));
  // A group picked twice is one group.
  return [...new Map(complete.map((g) => [g.name, g])).values()];
}

/** The complete measures (count when none is), named as the answer's columns. */
function summaryMeasures() {
  const complete = state.measures
    .filter((m) => m.fn === "count" || (m.column !== "" && columnOf(m.column)))
    .map((m) => {
      if (m.fn === "count") return { name: "count", label: "count", kind: "number" };
      const fn = m.fn === "countf" ? "count" : m.fn;
      // A chart draws numbers: counts, sums, averages, and the min or max of a number column.
      const type = columnOf(m.column).type;
      const kind =
        fn === "count" || fn === "sum" || fn === "avg" || NUMERIC_TYPES.test(type)
          ? "number"
          : DATE_TYPES.test(type)
            ? "date"
            : "text";
      return { name: `${fn}(${m.column})`, label: `${labelOf(m.column)} (${fn})`, kind };
    });
  // The same measure twice would be the same column twice.
  const unique = [...new Map(complete.map((m) => [m.name, m])).values()];
  return unique.length > 0 ? unique : [{ name: "count", label: "count", kind: "number" }];
}

function renderSummary() {
  const columns = state.resource.columns.filter(summable);
  const option = (c, selected) =>
    el("option", { value: c.id, textContent: c.label ? `${c.label} (${c.id})` : c.id, selected });
  $("groups").replaceChildren(
    ...state.groups.map((group, index) => {
      const column = el(
        "select",
        { id: `group-${index}-column` },
        el("option", { value: "", textContent: "Column…" }),
        ...columns.map((c) => option(c, c.id === group.column)),
      );
      const dated = columnOf(group.column) && DATE_TYPES.test(columnOf(group.column).type);
      // Date and timestamp columns group by their year, month or day (the first instant of each).
      const bucket = el(
        "select",
        { id: `group-${index}-bucket`, disabled: !dated },
        ...[
          ["", dated ? "each value" : "—"],
          ...(dated
            ? [
                ["year", "year"],
                ["month", "month"],
                ["day", "day"],
              ]
            : []),
        ].map(([v, t]) => el("option", { value: v, textContent: t, selected: v === group.bucket })),
      );
      const remove = el("button", { type: "button", textContent: "Remove", ariaLabel: `Remove group ${index + 1}` });
      column.addEventListener("change", () => {
        group.column = column.value;
        group.bucket = columnOf(column.value) && DATE_TYPES.test(columnOf(column.value).type) ? "month" : "";
        summaryChanged();
      });
      bucket.addEventListener("change", () => ((group.bucket = bucket.value), summaryChanged()));
      remove.addEventListener("click", () => (state.groups.splice(index, 1), summaryChanged()));
      return el(
        "div",
        { className: "pick" },
        el("div", {}, el("label", { htmlFor: column.id, textContent: `Group ${index + 1}` }), column),
        el("div", {}, el("label", { htmlFor: bucket.id, textContent: "By" }), bucket),
        remove,
      );
    }),
  );
  $("add-group").disabled = state.groups.length >= 8;
  $("measures").replaceChildren(
    ...state.measures.map((measure, index) => {
      const fn = el(
        "select",
        { id: `measure-${index}-fn` },
        ...Object.entries(MEASURES).map(([v, m]) =>
          el("option", { value: v, textContent: m.text, selected: v === measure.fn }),
        ),
      );
      const allowed = columns.filter(MEASURES[measure.fn].of);
      const column = el(
        "select",
        { id: `measure-${index}-column`, disabled: measure.fn === "count" },
        el("option", { value: "", textContent: measure.fn === "count" ? "—" : "Column…" }),
        ...allowed.map((c) => option(c, c.id === measure.column)),
      );
      const remove = el("button", {
        type: "button",
        textContent: "Remove",
        ariaLabel: `Remove measure ${index + 1}`,
        disabled: state.measures.length === 1,
      });
      fn.addEventListener("change", () => {
        measure.fn = fn.value;
        if (!columns.filter(MEASURES[fn.value].of).some((c) => c.id === measure.column)) measure.column = "";
        summaryChanged();
      });
      column.addEventListener("change", () => ((measure.column = column.value), summaryChanged()));
      remove.addEventListener("click", () => (state.measures.splice(index, 1), summaryChanged()));
      return el(
        "div",
        { className: "pick" },
        el("div", {}, el("label", { htmlFor: fn.id, textContent: `Measure ${index + 1}` }), fn),
        el("div", {}, el("label", { htmlFor: column.id, textContent: "Column" }), column),
        remove,
      );
    }),
  );
  $("add-measure").disabled = state.measures.length >= 16;
  // Sort by any output column; one that is gone (its group or measure removed) resets with its direction.
  const outputs = [...summaryGroups(), ...summaryMeasures()];
  const sort = $("summary-sort").value;
  $("summary-sort").replaceChildren(
    el("option", { value: "", textContent: "Group order" }),
    ...outputs.map((o) => el("option", { value: o.name, textContent: o.label, selected: o.name === sort })),
  );
  if ($("summary-sort").value === "") $("summary-direction").value = "";
}

function summaryChanged() {
  renderSummary();
  refreshLink();
}

function setMode(mode) {
  state.mode = mode;
  const summary = mode === "summary";
  $("rows-panel").hidden = summary;
  $("summary-panel").hidden = !summary;
  $("rows-before").hidden = !summary;
  $("columns-title").textContent = summary ? "2. Summary" : "2. Columns";
  for (const node of document.querySelectorAll(".rows-only")) node.hidden = summary;
  if (!summary) $("chart-box").hidden = true;
  if (state.resource && !state.loading) summaryChanged();
}

function renderFilters() {
  const columns = state.resource.columns;
  $("filters").replaceChildren(
    ...state.filters.map((filter, index) => {
      const column = el(
        "select",
        { id: `filter-${index}-column` },
        el("option", { value: "", textContent: "Column…" }),
        ...columns.map((c) =>
          el("option", { value: c.id, textContent: c.label ?? c.id, selected: c.id === filter.column }),
        ),
      );
      const picked = columns.find((c) => c.id === filter.column);
      const ranges = picked && RANGE_TYPES.test(picked.type) && state.resource.range_filters !== false;
      const ops = [
        ["eq", "is"],
        ...(ranges
          ? [
              ["gte", "≥"],
              ["lte", "≤"],
              ["gt", ">"],
              ["lt", "<"],
            ]
          : []),
      ];
      const op = el(
        "select",
        { id: `filter-${index}-op` },
        ...ops.map(([v, t]) => el("option", { value: v, textContent: t, selected: v === filter.op })),
      );
      let value;
      if (picked?.values && filter.op === "eq") {
        value = el(
          "select",
          { id: `filter-${index}-value` },
          el("option", { value: "", textContent: "Value…" }),
          ...picked.values.map((v) =>
            el("option", { value: cellText(v), textContent: cellText(v), selected: cellText(v) === filter.value }),
          ),
        );
      } else {
        value = el("input", {
          id: `filter-${index}-value`,
          type: "text",
          value: filter.value,
          placeholder: picked?.type === "timestamp" ? "2021-01-01" : "",
        });
      }
      const remove = el("button", { type: "button", textContent: "Remove", ariaLabel: `Remove filter ${index + 1}` });
      column.addEventListener(
        "change",
        () => Object.assign(filter, { column: column.value, op: "eq", value: "" }) && (renderFilters(), refreshLink()),
      );
      op.addEventListener("change", () => ((filter.op = op.value), renderFilters(), refreshLink()));
      value.addEventListener(
        value instanceof HTMLSelectElement ? "change" : "input",
        () => ((filter.value = value.value), refreshLink()),
      );
      remove.addEventListener("click", () => (state.filters.splice(index, 1), renderFilters(), refreshLink()));
      return el(
        "div",
        { className: "filter" },
        el("div", {}, el("label", { htmlFor: column.id, textContent: `Filter ${index + 1}: column` }), column),
        el("div", {}, el("label", { htmlFor: op.id, textContent: "Test" }), op),
        el("div", {}, el("label", { htmlFor: value.id, textContent: "Value" }), value),
        remove,
      );
    }),
  );
}

let pickRun = 0;
async function pickResource(name) {
  const run = ++pickRun;
  state.fields = [];
  state.filters = [];
  state.groups = [];
  state.measures = [{ fn: "count", column: "" }];
  state.resource = undefined;
  $("summary-sort").replaceChildren(el("option", { value: "", textContent: "Group order" }));
  $("summary-direction").value = "";
  $("groups").replaceChildren();
  $("measures").replaceChildren();
  $("chart-box").hidden = true;
  // The sort's column and its direction reset together: a new table starts in its own order.
  $("sort-column").replaceChildren(el("option", { value: "", textContent: "Table order" }));
  $("sort-direction").value = "";
  $("sort-direction").disabled = true;
  $("sort-note").hidden = true;
  $("columns").replaceChildren();
  $("filters").replaceChildren();
  if (name === "") {
    $("resource-about").textContent = "";
    showLoading("Choose a table first");
    return;
  }
  $("resource-about").textContent = "Loading columns…";
  showLoading("Loading the table's columns…");
  let resource;
  try {
    resource = await getJson(`/resources/${encodeURIComponent(name)}`);
  } catch (error) {
    if (run !== pickRun) return;
    $("resource-about").textContent = error.message;
    markCounting("No table loaded.");
    return;
  }
  if (run !== pickRun) return;
  state.resource = resource;
  state.loading = false;
  const r = state.resource;
  $("resource-about").textContent = [
    r.title,
    r.description,
    r.rows === null ? "" : `${countText(r.rows)} rows, ${r.columns.length} columns.`,
  ]
    .filter(Boolean)
    .join(" · ");
  $("sort-column").replaceChildren(
    el("option", { value: "", textContent: "Table order" }),
    ...r.columns.map((c) => el("option", { value: c.id, textContent: c.label ?? c.id })),
  );
  renderColumns();
  renderFilters();
  renderSummary();
  refreshLink();
  renderSnapshots(name);
}

// ---- snapshots, reference, start ------------------------------------------------------------------

/** A run in progress (snapshot runs as Workflows): what it writes, how far it got, its last failed try. */
function runningItem(run) {
  const where =
    run.format === null
      ? "starting"
      : `${run.format}, step ${run.step}: ${countText(run.rows)} rows, ${Math.round(run.bytes / 1048576)} MiB so far`;
  const text = `${run.job}: running since ${new Date(run.started).toLocaleString()} (${where})${run.last_error ? `; last failed try: ${run.last_error}` : ""}`;
  return el("li", { className: run.last_error ? "warning" : "note", textContent: text });
}

async function renderSnapshots(name) {
  const box = $("snapshots");
  try {
    const { jobs } = await getJson("/snapshots");
    const mine = jobs.filter((job) => job.query?.resource === name);
    const items = mine.flatMap((job) => [
      ...Object.entries(job.latest).map(([format, file]) =>
        el(
          "li",
          {},
          el("a", { href: file.url, textContent: `${job.name} (${format})` }),
          ` ${countText(file.rows)} rows, ${new Date(file.time).toLocaleString()}`,
        ),
      ),
      ...(job.running ? [runningItem(job.running)] : []),
      ...(job.last_run?.status === "failed"
        ? [
            el("li", {
              className: "warning",
              textContent: `${job.name}: the last run failed: ${job.last_run.error ?? "no reason recorded"}`,
            }),
          ]
        : []),
    ]);
    box.replaceChildren(
      items.length > 0
        ? el("ul", {}, ...items)
        : el("p", {
            className: "muted",
            textContent: mine.length > 0 ? `Jobs ${mine.map((j) => j.name).join(", ")} have not run yet.` : "None.",
          }),
    );
  } catch {
    box.replaceChildren(el("p", { className: "muted", textContent: "Not available." }));
  }
}

/** The table's Markdown flavour: `text` in backticks is code. */
function withCode(text) {
  return text.split("`").map((part, i) => (i % 2 === 1 ? el("code", { textContent: part }) : part));
}

async function renderReference() {
  const doc = await getJson("/openapi.json");
  // Every export's parameters, once each (some belong to one format: numeric to Parquet).
  // Exports' descriptions first; then what only aggregates take (group_by, measures).
  const of = (prefix) =>
    Object.entries(doc.paths)
      .filter(([path]) => path.startsWith(prefix))
      .flatMap(([, op]) => op.get.parameters.map((p) => [p.name, p]));
  const exports = new Map(of("/export."));
  const params = [...new Map([...exports, ...of("/aggregate.").filter(([name]) => !exports.has(name))]).values()];
  $("reference").replaceChildren(
    ...params.flatMap((p) => [
      el("dt", { id: p["x-anchor"], textContent: p.name }),
      el("dd", {}, ...withCode(`${p.description}.`), " Example: ", el("code", { textContent: p["x-example-link"] })),
    ]),
  );
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

async function start() {
  showHealth($("health"), {});
  renderReference().catch(() => {});
  // A decimal comma needs a separator other than the comma (CSV with ; or |, or TSV).
  const decimalAllowed = () => state.format === "tsv" || (state.format === "csv" && $("delimiter").value !== ",");
  $("delimiter").addEventListener("change", () => ($("decimal").disabled = !decimalAllowed()));
  for (const format of ["csv", "tsv", "xlsx", "json", "ndjson", "parquet"]) {
    const radio = el("input", {
      type: "radio",
      name: "format",
      value: format,
      checked: format === state.format,
      id: `format-${format}`,
    });
    radio.addEventListener("change", () => {
      state.format = format;
      $("csv-options").disabled = format !== "csv" && format !== "tsv";
      $("delimiter").disabled = format !== "csv";
      $("decimal").disabled = !decimalAllowed();
      $("labels").disabled = format === "json" || format === "ndjson";
      refreshLink();
    });
    $("formats").append(el("label", { className: "check", htmlFor: radio.id }, radio, FORMAT_NAMES[format]));
  }
  for (const id of ["q", "limit", "offset", "filename", "summary-limit"]) $(id).addEventListener("input", refreshLink);
  for (const radio of document.querySelectorAll('input[name="mode"]'))
    radio.addEventListener("change", () => setMode(radio.value));
  $("add-group").addEventListener("click", () => {
    state.groups.push({ column: "", bucket: "" });
    renderSummary();
    $(`group-${state.groups.length - 1}-column`).focus();
  });
  $("add-measure").addEventListener("click", () => {
    state.measures.push({ fn: "sum", column: "" });
    renderSummary();
    $(`measure-${state.measures.length - 1}-column`).focus();
  });
  $("summary-sort").addEventListener("change", () => {
    if ($("summary-sort").value === "") $("summary-direction").value = "";
    refreshLink();
  });
  $("summary-direction").addEventListener("change", refreshLink);
  $("chart-measure").addEventListener("change", () => renderChart(chartRows));
  // Back to the table's order: no direction left over for the next column picked.
  $("sort-column").addEventListener("change", () => {
    if ($("sort-column").value === "") $("sort-direction").value = "";
  });

  for (const id of [
    "sort-column",
    "sort-direction",
    "delimiter",
    "header",
    "bom",
    "formula-guard",
    "decimal",
    "labels",
  ])
    $(id).addEventListener("change", refreshLink);
  $("add-filter").addEventListener("click", () => {
    state.filters.push({ column: "", op: "eq", value: "" });
    renderFilters();
    $(`filter-${state.filters.length - 1}-column`).focus();
  });
  $("resource").addEventListener("change", () => pickResource($("resource").value));
  $("sign").addEventListener("click", async () => {
    try {
      renderOutput(await sign(pathOf(state.format, exportParams()), $("expiry").value));
    } catch (error) {
      $("warnings").replaceChildren(el("li", { textContent: error.message }));
    }
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.adminToken = $("admin-token").value.trim();
    showHealth($("health"), authHeaders());
    loadResources();
  });
  await loadResources();
}

async function loadResources() {
  let list;
  try {
    list = await getJson("/resources");
  } catch (error) {
    $("operator").hidden = false;
    const why = error.status === 401 ? "Sign in as an operator first" : error.message;
    $("resource").replaceChildren(el("option", { value: "", textContent: why }));
    showLoading(why);
    markCounting("No table loaded.");
    return;
  }
  state.signing = list.signing;
  $("signing").hidden = !list.signing;
  $("operator").hidden = !list.signing;
  const wanted = new URLSearchParams(location.search).get("resource");
  $("resource").replaceChildren(
    el("option", { value: "", textContent: "Choose a table…" }),
    ...list.resources.map((r) =>
      el("option", {
        value: r.name,
        textContent: `${r.title ?? r.name}${typeof r.rows === "number" ? ` (${countText(r.rows)} rows)` : ""}`,
      }),
    ),
  );
  const first = wanted ?? list.resources[0]?.name;
  if (first) {
    $("resource").value = first;
    await pickResource(first);
  } else {
    showLoading("This worker publishes no table yet");
    markCounting("No table loaded.");
  }
}

start();
