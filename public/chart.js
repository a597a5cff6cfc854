// The summary's chart, drawn by the page itself as SVG (no library, no CDN: the page works offline).
// chartModel is pure (rows and column kinds in, marks out) so the spec can check it against the rows;
// drawChart turns a model into SVG elements. Bars for text groups, a line over a date bucket (one
// line per value of the other group columns). Pixel positions only: the exact values stay text.
import { cellText } from "./exact-json.js";

/** @typedef {{ name: string, label: string, kind: "date" | "text" }} Group */
/** @typedef {{ name: string, label: string }} Measure */

const BAR = 22;
const MOST_BARS = 40;
const MOST_LINES = 8;
export const COLOURS = ["#0a5bd3", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#1098ad", "#e67700", "#495057"];

/** A cell as a number for drawing; undefined for an empty cell or text that is not one. */
function numberOf(value) {
  const text = cellText(value);
  if (text === "") return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

/** The axis from zero to the values (both ways when some are negative); [0, 1] when all are zero. */
export function domain(values) {
  const lo = Math.min(0, ...values);
  const hi = Math.max(0, ...values);
  return lo === hi ? [0, 1] : [lo, hi];
}

/** Round ticks (1, 2 or 5 times a power of ten apart, zero among them) inside [lo, hi]: at most `most` steps. */
export function ticks([lo, hi], most = 5) {
  const raw = (hi - lo) / most;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    out.push(Number(t.toPrecision(12)));
  return out;
}

/**
 * What to draw for a summary's rows. `groups` in the link's order, `measure` the one to plot.
 * Line: the first date group on x, one series per combination of the other groups' values.
 * Bars: one per row, labelled with its groups' values (or the measure itself for the totals row).
 */
export function chartModel(rows, groups, measure) {
  const date = groups.find((g) => g.kind === "date");
  if (date && rows.length > 0) {
    const others = groups.filter((g) => g !== date);
    const series = new Map();
    for (const row of rows) {
      const key = others.map((g) => cellText(row[g.name]) || "(empty)").join(" · ");
      const x = cellText(row[date.name]);
      const y = numberOf(row[measure.name]);
      if (x === "") continue;
      if (!series.has(key)) series.set(key, []);
      series.get(key).push({ x, y, text: cellText(row[measure.name]) });
    }
    const all = [...series.entries()].map(([name, points]) => ({
      name,
      points: points.sort((a, b) => (a.x < b.x ? -1 : a.x > b.x ? 1 : 0)),
    }));
    return {
      kind: "line",
      x: date,
      measure,
      series: all.slice(0, MOST_LINES),
      left_out: Math.max(0, all.length - MOST_LINES),
    };
  }
  const bars = rows.map((row) => ({
    label: groups.length === 0 ? measure.label : groups.map((g) => cellText(row[g.name]) || "(empty)").join(" · "),
    value: numberOf(row[measure.name]),
    text: cellText(row[measure.name]),
  }));
  return { kind: "bar", measure, bars: bars.slice(0, MOST_BARS), left_out: Math.max(0, bars.length - MOST_BARS) };
}

const SVG = "http://www.w3.org/2000/svg";
function node(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}
const title = (text) => node("title", {}, text);
const short = (text, most) => (text.length > most ? `${text.slice(0, most - 1)}…` : text);
/** A tick's number, short: 25K, 1.2M, 3.4E+21 (the exact values are in the bars' and points' titles). */
const tickText = (t) =>
  Math.abs(t) >= 1e15 || (Math.abs(t) < 1e-3 && t !== 0)
    ? t.toExponential(1).toUpperCase()
    : t.toLocaleString("en", { notation: Math.abs(t) >= 1e4 ? "compact" : "standard", maximumFractionDigits: 6 });

/**
 * The model as an <svg>, drawn for a box `width` pixels wide (text stays 12 px on a phone as on a
 * desktop) and scaled with its box after that (width 100%, aspect from the viewBox).
 */
export function drawChart(model, box = 640) {
  const width = Math.max(300, Math.min(Math.round(box), 768));
  return model.kind === "line" ? drawLine(model, width) : drawBars(model, width);
}

function drawBars(model, width) {
  const left = Math.min(170, Math.round(width * 0.3));
  const right = width < 500 ? 70 : 90;
  const top = 24;
  const height = top + model.bars.length * BAR + 24;
  const values = model.bars.map((b) => b.value).filter((v) => v !== undefined);
  // About one tick per 80 px: their labels never run into each other on a phone.
  const [lo, hi] = domain(values);
  const scale = ticks([lo, hi], Math.max(2, Math.floor((width - left - right) / 80)));
  const x = (v) => left + ((v - lo) / (hi - lo)) * (width - left - right);
  const svg = node("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width: "100%",
    role: "img",
    class: "chart",
    "data-kind": "bar",
  });
  svg.append(title(`Bar chart of ${model.measure.label}`));
  for (const t of scale) {
    svg.append(
      node("line", { x1: x(t), x2: x(t), y1: top - 4, y2: height - 20, class: t === 0 ? "axis" : "gridline" }),
    );
    svg.append(node("text", { x: x(t), y: height - 6, "text-anchor": "middle", class: "tick" }, tickText(t)));
  }
  model.bars.forEach((bar, i) => {
    const y = top + i * BAR;
    svg.append(
      node(
        "text",
        { x: left - 6, y: y + BAR / 2 + 4, "text-anchor": "end", class: "label" },
        title(bar.label),
        short(bar.label, Math.floor(left / 7)),
      ),
    );
    if (bar.value === undefined) {
      svg.append(node("text", { x: x(0) + 4, y: y + BAR / 2 + 4, class: "value empty" }, "empty"));
      return;
    }
    const [a, b] = [x(Math.min(0, bar.value)), x(Math.max(0, bar.value))];
    svg.append(
      node(
        "rect",
        {
          x: a,
          y: y + 3,
          width: Math.max(b - a, 0.5),
          height: BAR - 6,
          fill: COLOURS[0],
          class: "bar",
          "data-value": bar.text,
        },
        title(`${bar.label}: ${bar.text}`),
      ),
    );
    svg.append(node("text", { x: b + 4, y: y + BAR / 2 + 4, class: "value" }, short(bar.text, 14)));
  });
  return svg;
}

function drawLine(model, width) {
  const left = width < 500 ? 56 : 80;
  const right = 20;
  const top = 16;
  const perRow = width < 500 ? 2 : 3;
  const legend = model.series.length > 1 ? 20 * Math.ceil(model.series.length / perRow) : 0;
  const plot = width < 500 ? 200 : 260;
  const height = top + plot + 28 + legend;
  const xs = [...new Set(model.series.flatMap((s) => s.points.map((p) => p.x)))].sort();
  const time = (text) => Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text.endsWith("Z") ? text : `${text}Z`);
  const [t0, t1] = [time(xs[0]), time(xs[xs.length - 1])];
  const x = (text) =>
    t1 === t0 ? (left + width - right) / 2 : left + ((time(text) - t0) / (t1 - t0)) * (width - left - right);
  const values = model.series.flatMap((s) => s.points.map((p) => p.y)).filter((v) => v !== undefined);
  // The axis ends on a tick above the highest point (and below the lowest): no point on the edge.
  const scale = ticks(domain(values));
  const step = scale[1] - scale[0];
  const [low, high] = domain(values);
  if (scale[0] > low) scale.unshift(Number((scale[0] - step).toPrecision(12)));
  if (scale[scale.length - 1] < high) scale.push(Number((scale[scale.length - 1] + step).toPrecision(12)));
  const [lo, hi] = [scale[0], scale[scale.length - 1]];
  const y = (v) => top + plot - ((v - lo) / (hi - lo)) * plot;
  const svg = node("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width: "100%",
    role: "img",
    class: "chart",
    "data-kind": "line",
  });
  svg.append(title(`Line chart of ${model.measure.label} over ${model.x.label}`));
  for (const t of scale) {
    svg.append(node("line", { x1: left, x2: width - right, y1: y(t), y2: y(t), class: t === 0 ? "axis" : "gridline" }));
    svg.append(node("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, tickText(t)));
  }
  const most = width < 500 ? 3 : 5;
  const shown =
    xs.length <= most ? xs : Array.from({ length: most }, (_, i) => xs[Math.round((i * (xs.length - 1)) / (most - 1))]);
  // The first and last dates end inside the chart, not cut by its edges.
  const anchor = (text) =>
    xs.length > 1 && text === xs[0] ? "start" : xs.length > 1 && text === xs[xs.length - 1] ? "end" : "middle";
  for (const text of new Set(shown))
    svg.append(
      node("text", { x: x(text), y: top + plot + 18, "text-anchor": anchor(text), class: "tick" }, text.slice(0, 10)),
    );
  model.series.forEach((series, i) => {
    const colour = COLOURS[i % COLOURS.length];
    // A gap where a value is empty: the line does not pretend it was zero.
    let d = "";
    let pen = false;
    for (const p of series.points) {
      if (p.y === undefined) {
        pen = false;
        continue;
      }
      d += `${pen ? "L" : "M"}${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`;
      pen = true;
    }
    const group = node("g", { class: "series", "data-series": series.name }, title(series.name || model.measure.label));
    group.append(node("path", { d, fill: "none", stroke: colour, "stroke-width": 2, class: "line" }));
    for (const p of series.points) {
      if (p.y !== undefined)
        group.append(
          node(
            "circle",
            { cx: x(p.x), cy: y(p.y), r: 2.5, fill: colour, class: "point", "data-x": p.x, "data-value": p.text },
            title(`${series.name ? `${series.name}, ` : ""}${p.x}: ${p.text}`),
          ),
        );
    }
    svg.append(group);
    if (legend > 0) {
      const lx = left + (i % perRow) * Math.floor((width - left) / perRow);
      const ly = top + plot + 36 + Math.floor(i / perRow) * 20;
      svg.append(
        node("rect", { x: lx, y: ly - 9, width: 10, height: 10, fill: colour }),
        node(
          "text",
          { x: lx + 14, y: ly, class: "label" },
          short(series.name, Math.floor((width - left) / perRow / 7) - 2),
        ),
      );
    }
  });
  return svg;
}
