// Charts over time, drawn by the vendored uPlot (server/static/uplot/, see its README): a figure
// with a caption, the chart on a canvas, and the same numbers as a table under a disclosure, so
// a screen reader and a copy-paste get them too. Labels come from the API and may be chat text:
// uPlot writes its legend and axes with textContent and canvas text, never as HTML.
//
// The figure's element `.uplot` is the uPlot instance (its `.data` is what is drawn), and
// `data-ready` is set once it is drawn: the browser tests read the drawn numbers from there.

import uPlot from "/static/uplot/uPlot.esm.js";
import { h } from "./dom.js";

// Distinguishable in light and dark schemes (Okabe–Ito), in series order.
const COLORS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];
const HEIGHT = 220;
const DAY_SECONDS = 86_400;

/** "2024-05-01" -> seconds since the epoch at that day's UTC midnight. */
export function daySeconds(day) {
  return Date.parse(`${day}T00:00:00Z`) / 1000;
}

/** "2024-W18" -> seconds since the epoch at the Monday (UTC) of that ISO week. */
export function isoWeekSeconds(week) {
  const [year, number] = week.split("-W").map(Number);
  // 4 January is always in week 1; its week's Monday starts week 1.
  const january4 = Date.UTC(year, 0, 4);
  const weekday = (new Date(january4).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
  return (january4 / 1000) - weekday * DAY_SECONDS + (number - 1) * 7 * DAY_SECONDS;
}

function axis(ink) {
  return { stroke: ink, grid: { stroke: "rgba(128,128,128,.2)" }, ticks: { stroke: "rgba(128,128,128,.4)" } };
}

/** Every `n`th value, from the last one back (the newest is always labelled). */
function everyNth(values, n) {
  return values.filter((_value, index) => (values.length - 1 - index) % n === 0);
}

/** "2024-05-01" (UTC) for a time axis value. */
function dayLabel(seconds) {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

function dataTable(caption, rowLabels, series, xLabel) {
  return h("details", { class: "chart-data" },
    h("summary", {}, "The numbers"),
    h("div", { class: "table-scroll" },
      h("table", { class: "listing" },
        h("caption", {}, caption),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, xLabel), series.map((s) => h("th", { scope: "col" }, s.label)))),
        h("tbody", {}, rowLabels.map((label, row) => h("tr", {},
          h("th", { scope: "row" }, label),
          series.map((s) => h("td", { class: "number" }, s.values[row]))))))));
}

/**
 * A time chart as a <figure>: `x` in seconds (UTC days or ISO weeks' Mondays), one line per
 * `series` entry ({label, values}); `bars: true` draws the first series as bars (counts per
 * day). `name` becomes data-chart (what tests and styles select). Drawn once the figure is in
 * the page and has a width; redrawn to fit when that width changes.
 */
export function timeChart({ name, title, x, series, xLabel = "Day", bars = false, weeks = null }) {
  const plot = h("div", { class: "chart-plot" });
  const figure = h("figure", { class: "chart", dataset: { chart: name } },
    h("figcaption", {}, title), plot);
  if (!x.length) {
    figure.append(h("p", { class: "muted" }, "Nothing to draw yet."));
    figure.dataset.ready = "true";
    return figure;
  }
  const rowLabels = weeks ?? x.map(dayLabel);
  const step = weeks ? 7 * DAY_SECONDS : DAY_SECONDS;
  figure.append(dataTable(title, rowLabels, series, xLabel));
  // Canvas text takes a color, not `currentColor`: the page's ink, read when the chart is drawn.
  const options = (width, ink) => ({
    width,
    height: HEIGHT,
    // The API's days and weeks are UTC: the axis says so whatever the browser's zone.
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
    // A day or week axis: ticks on whole days, labelled as dates.
    // Half a step of room either side, so the first and last bars are whole.
    scales: {
      x: { time: true, range: () => [x[0] - step / 2, x[x.length - 1] + step / 2] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
    },
    axes: [
      {
        ...axis(ink),
        // Weeks are labelled by their ISO name on their own ticks, as many as fit.
        ...(weeks ? {
          splits: (u) => everyNth(x, Math.ceil(x.length / Math.max(1, Math.floor(u.bbox.width / devicePixelRatio / 90)))),
          values: (_u, splits) => splits.map((value) => rowLabels[x.indexOf(value)] ?? ""),
        } : {}),
      },
      axis(ink),
    ],
    series: [
      { label: xLabel, value: (_u, value) => (value === null ? "—" : rowLabels[x.indexOf(value)] ?? dayLabel(value)) },
      ...series.map((s, index) => ({
        label: s.label,
        stroke: COLORS[index % COLORS.length],
        width: 2,
        fill: bars && index === 0 ? `${COLORS[0]}55` : undefined,
        paths: bars && index === 0 ? uPlot.paths.bars({ size: [0.6, 40] }) : undefined,
        points: { show: true, size: 5 },
      })),
    ],
    cursor: { drag: { x: false, y: false } },
    // Topic titles are long: a weekly chart's legend lists the lines without live values (the
    // numbers are in the table below it).
    legend: { live: !weeks },
  });
  const data = [x, ...series.map((s) => s.values)];
  let chart = null;
  let drawnWidth = 0;
  const observer = new ResizeObserver(() => {
    if (chart && !plot.isConnected) { // the page was left: let the chart go
      observer.disconnect();
      chart.destroy();
      return;
    }
    const width = Math.floor(plot.clientWidth);
    if (!width || width === drawnWidth) return;
    drawnWidth = width;
    if (chart) {
      chart.setSize({ width, height: HEIGHT });
    } else {
      chart = new uPlot(options(width, getComputedStyle(plot).color), data, plot);
      figure.uplot = chart;
      figure.dataset.ready = "true";
    }
  });
  observer.observe(plot);
  return figure;
}

/**
 * Several weekly trends ({label, trend: [{week, mentions}]}) on one week axis: the union of
 * their weeks, oldest first, a week without mentions of one of them drawn as 0.
 */
export function weeklyTrendChart({ name, title, trends }) {
  const weeks = [...new Set(trends.flatMap((t) => t.trend.map((p) => p.week)))].sort();
  const series = trends.map((t) => {
    const byWeek = new Map(t.trend.map((p) => [p.week, p.mentions]));
    return { label: t.label, values: weeks.map((week) => byWeek.get(week) ?? 0) };
  });
  return timeChart({ name, title, x: weeks.map(isoWeekSeconds), series, xLabel: "Week", weeks });
}
