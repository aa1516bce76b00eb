#!/usr/bin/python3
"""Writes a self-contained report.html from an fpconform report.json.

Usage:
  plot_report.py [--no-plots] REPORT_JSON OUT_HTML

Reads the report written by `fpconform tolerance` (schema: reports/report.h, "JSON form") and
writes one HTML page with inline SVG figures (matplotlib, Agg backend) and HTML tables; the page
loads nothing from the network and carries its own CSS. Documented in reports/HTML.md.

The output is deterministic: the same report.json gives byte-identical HTML (fixed SVG hash
salts, text kept as text, no dates, sorted iteration everywhere).

Exit status:
  0  success.
  1  the output file could not be written.
  2  bad usage, or REPORT_JSON is unreadable, not JSON, or not an fpconform report (the message,
     one line on stderr, names the file and the JSON path of the problem).
  3  matplotlib is not importable (without --no-plots); rerun with --no-plots for the same page
     without figures.

Example:
  /usr/bin/python3 reports/plot_report.py out/report.json out/report.html
"""

import html
import io
import json
import math
import os
import re
import sys
import tempfile

PROG = "plot_report.py"
SUPPORTED_VERSION = 1
CELL_TYPES = ("int", "float", "string")
NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
# Tables that get a dedicated section; every other table is rendered generically.
SPECIAL_TABLES = ("tolerance", "cross_platform", "power")
GENERIC_FIRST = ("rubric", "defaults")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# A rejection fraction below this is highlighted: the tolerance lets most such bugs pass.
WEAK_POWER = 0.5


class ReportError(Exception):
  """An unreadable or invalid report; the message names the JSON path."""


# ----------------------------------------------------------------------------------------------
# Reading and validating the report.


def _type_name(value):
  if value is None:
    return "null"
  if isinstance(value, bool):
    return "boolean"
  if isinstance(value, int):
    return "int"
  if isinstance(value, float):
    return "float"
  if isinstance(value, str):
    return "string"
  if isinstance(value, list):
    return "array"
  return "object"


def _cell(value, col_type, path):
  """Checks one cell against its column type; returns it with floats as Python floats."""
  if value is None:
    return None
  if col_type == "int":
    if isinstance(value, int) and not isinstance(value, bool):
      return value
    raise ReportError("%s: expected int, got %s" % (path, _type_name(value)))
  if col_type == "float":
    if isinstance(value, (int, float)) and not isinstance(value, bool):
      return float(value)
    if isinstance(value, str) and value in NON_FINITE:
      return NON_FINITE[value]
    raise ReportError("%s: expected float, got %s" % (path, _type_name(value)))
  if isinstance(value, str):
    return value
  raise ReportError("%s: expected string, got %s" % (path, _type_name(value)))


def _expect(value, kind, path):
  """Returns value; raises ReportError unless it is a JSON `kind` ("object" or "array")."""
  if not isinstance(value, dict if kind == "object" else list):
    raise ReportError("%s: expected %s, got %s" % (path, kind, _type_name(value)))
  return value


def _string_field(obj, key, path, required):
  value = obj.get(key)
  if value is None and not required:
    return ""
  if not isinstance(value, str):
    raise ReportError("%s.%s: expected string, got %s" % (path, key, _type_name(value)))
  return value


class Table:
  """One report table: name, title, description, columns (dicts) and typed rows."""

  def __init__(self, name, title, description, columns, rows):
    self.name = name
    self.title = title
    self.description = description
    self.columns = columns
    self.rows = rows
    self.index = {}
    for i, col in enumerate(columns):
      self.index.setdefault(col["name"], i)

  def has(self, *names):
    return all(n in self.index for n in names)

  def get(self, row, name):
    """The cell of `row` in column `name`; None when the column is absent."""
    i = self.index.get(name)
    return None if i is None else row[i]


def load_report(path):
  """Returns (provenance, tables) from report.json at `path`; raises ReportError."""
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise ReportError("cannot read: %s" % (e.strerror or e))
  try:
    doc = json.loads(data.decode("utf-8"))
  except UnicodeDecodeError as e:
    raise ReportError("not UTF-8: %s" % e)
  except ValueError as e:
    raise ReportError("invalid JSON: %s" % e)
  _expect(doc, "object", "top level")
  if "fpconform_report" not in doc:
    raise ReportError('not an fpconform report (no "fpconform_report" key)')
  version = doc["fpconform_report"]
  if version != SUPPORTED_VERSION or isinstance(version, bool):
    raise ReportError("fpconform_report: unsupported version %s (this script reads %d)" %
                      (json.dumps(version), SUPPORTED_VERSION))
  provenance = []
  prov = _expect(doc.get("provenance", []), "array", "provenance")
  for i, entry in enumerate(prov):
    if (not isinstance(entry, list) or len(entry) != 2 or
        not all(isinstance(x, str) for x in entry)):
      raise ReportError("provenance[%d]: expected [\"key\", \"value\"]" % i)
    provenance.append((entry[0], entry[1]))
  raw_tables = _expect(doc.get("tables", []), "array", "tables")
  tables = []
  for t, raw in enumerate(raw_tables):
    tpath = "tables[%d]" % t
    _expect(raw, "object", tpath)
    name = _string_field(raw, "name", tpath, True)
    title = _string_field(raw, "title", tpath, False)
    description = _string_field(raw, "description", tpath, False)
    raw_cols = _expect(raw.get("columns"), "array", tpath + ".columns")
    columns = []
    for c, col in enumerate(raw_cols):
      cpath = "%s.columns[%d]" % (tpath, c)
      _expect(col, "object", cpath)
      col_type = _string_field(col, "type", cpath, True)
      if col_type not in CELL_TYPES:
        raise ReportError('%s.type: expected "int", "float" or "string", got "%s"' %
                          (cpath, col_type))
      columns.append({
          "name": _string_field(col, "name", cpath, True),
          "type": col_type,
          "unit": _string_field(col, "unit", cpath, False),
          "description": _string_field(col, "description", cpath, False),
      })
    raw_rows = _expect(raw.get("rows", []), "array", tpath + ".rows")
    rows = []
    for r, row in enumerate(raw_rows):
      rpath = "%s.rows[%d]" % (tpath, r)
      _expect(row, "array", rpath)
      if len(row) != len(columns):
        raise ReportError("%s: %d cells for %d columns" % (rpath, len(row), len(columns)))
      rows.append([
          _cell(v, columns[i]["type"], "%s[%d]" % (rpath, i)) for i, v in enumerate(row)
      ])
    tables.append(Table(name, title, description, columns, rows))
  return provenance, tables


# ----------------------------------------------------------------------------------------------
# Formatting helpers.


def esc(text):
  return html.escape(str(text), quote=True)


def fmt_cell(value):
  """A cell as text: shortest round-trip floats, inf/-inf/nan, empty for null."""
  if value is None:
    return ""
  if isinstance(value, float):
    if math.isnan(value):
      return "nan"
    if math.isinf(value):
      return "inf" if value > 0 else "-inf"
    return repr(value)
  return str(value)


def fmt_short(value):
  """A float for captions: 4 significant digits."""
  if value is None:
    return "n/a"
  if isinstance(value, float) and not math.isfinite(value):
    return fmt_cell(value)
  return "%.4g" % value


def slug(text):
  s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
  return s or "section"


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*")


def md_inline(text):
  """Inline markdown: `code` and **bold**; everything else HTML-escaped."""
  out = []
  pos = 0
  for m in _INLINE.finditer(text):
    out.append(esc(text[pos:m.start()]))
    if m.group(1) is not None:
      out.append("<code>%s</code>" % esc(m.group(1)))
    else:
      out.append("<strong>%s</strong>" % esc(m.group(2)))
    pos = m.end()
  out.append(esc(text[pos:]))
  return "".join(out)


def md_block(text):
  """Minimal markdown: paragraphs (blank-line separated), "- "/"* " bullet lists, inline."""
  out = []
  para = []
  items = []

  def flush_para():
    if para:
      out.append("<p>%s</p>" % md_inline(" ".join(para)))
      del para[:]

  def flush_items():
    if items:
      out.append("<ul>%s</ul>" % "".join("<li>%s</li>" % md_inline(i) for i in items))
      del items[:]

  for line in text.splitlines():
    stripped = line.strip()
    if not stripped:
      flush_para()
      flush_items()
    elif stripped.startswith(("- ", "* ")):
      flush_para()
      items.append(stripped[2:].strip())
    elif items and line[:1].isspace():
      items[-1] += " " + stripped  # continuation of a list item
    else:
      flush_items()
      para.append(stripped)
  flush_para()
  flush_items()
  return "\n".join(out)


def positive_finite(v):
  return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def max_of(values):
  """Max over non-null, non-NaN values (inf counts); None when there are none."""
  vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
  if not vals:
    nans = [v for v in values if v is not None]
    return math.nan if nans else None
  return max(vals)


def k_key(k):
  return (0, k) if isinstance(k, (int, float)) and not isinstance(k, bool) else (1, str(k))


# ----------------------------------------------------------------------------------------------
# Data preparation (independent of matplotlib, so --no-plots shows the same data tables).


def group_max(table, rows, series_of, columns):
  """Groups rows by (series_of(row), k) and takes the max of each column; sorted output.

  Returns [(series, [(k, {column: max}), ...]), ...]. Rows whose k is null are skipped.
  """
  acc = {}
  for row in rows:
    k = table.get(row, "k")
    if k is None:
      continue
    per_k = acc.setdefault(series_of(row), {})
    cell = per_k.setdefault(k, {c: [] for c in columns})
    for c in columns:
      cell[c].append(table.get(row, c))
  result = []
  for s in sorted(acc):
    ks = sorted(acc[s], key=k_key)
    result.append((s, [(k, {c: max_of(acc[s][k][c]) for c in columns}) for k in ks]))
  return result


def log_points(grouped, column):
  """Splits grouped data into plottable (k, value) lists and a list of dropped descriptions."""
  plot = {}
  dropped = []
  for s, pts in grouped:
    xs, ys = [], []
    for k, vals in pts:
      v = vals[column]
      if v is None:
        continue  # not applicable: nothing to draw, nothing to note
      if positive_finite(k) and positive_finite(v):
        xs.append(k)
        ys.append(v)
      else:
        dropped.append("%s %s at K=%s (%s)" % (s, column, fmt_cell(k), fmt_cell(v)))
    plot[s] = (xs, ys)
  return plot, dropped


def dropped_note(dropped):
  if not dropped:
    return ""
  shown = "; ".join(dropped[:8])
  more = " and %d more" % (len(dropped) - 8) if len(dropped) > 8 else ""
  return (" Left out (zero or non-finite values cannot go on a log axis): %s%s." %
          (shown, more))


# ----------------------------------------------------------------------------------------------
# Plotting.


class Plotter:
  """Makes deterministic inline SVG figures with matplotlib (Agg)."""

  def __init__(self):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    from matplotlib import ticker  # pylint: disable=import-outside-toplevel
    from matplotlib.lines import Line2D  # pylint: disable=import-outside-toplevel
    self.plt = plt
    self.Line2D = Line2D
    self.ticker = ticker
    matplotlib.rcParams.update({
        "svg.fonttype": "none",
        "svg.hashsalt": "fpconform",
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "lines.linewidth": 1.4,
        "lines.markersize": 4,
        "path.simplify": False,
    })
    self.matplotlib = matplotlib
    self.count = 0
    self.colour_map = {}

  def set_series_order(self, names):
    """Fixes one colour and marker per series name, the same in every figure."""
    palette = self.plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    n = palette.N
    for i, name in enumerate(sorted(names)):
      self.colour_map[name] = (palette(i % n), MARKERS[(i // n) % len(MARKERS)])

  def style(self, name):
    return self.colour_map.get(name, ("black", "o"))

  @staticmethod
  def label(text):
    return str(text).replace("$", r"\$")  # no mathtext from user strings

  def to_svg(self, fig):
    """The figure as an SVG element string; ids are unique per figure in the page."""
    self.count += 1
    self.matplotlib.rcParams["svg.hashsalt"] = "fpconform-figure-%d" % self.count
    buf = io.StringIO()
    fig.savefig(buf, format="svg",
                metadata={"Date": None, "Creator": None})
    self.plt.close(fig)
    svg = buf.getvalue()
    start = svg.find("<svg")
    svg = svg[start:].strip() if start >= 0 else svg
    # matplotlib numbers its element ids per figure ("axes_1", "xtick_1", ...); prefix them and
    # every reference to them so that ids stay unique when several figures share one page.
    prefix = "fig%d-" % self.count
    svg = re.sub(r'\bid="([^"]+)"', lambda m: 'id="%s%s"' % (prefix, m.group(1)), svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: "url(#%s%s)" % (prefix, m.group(1)), svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: 'href="#%s%s"' % (prefix, m.group(1)), svg)
    return svg

  def _log_axes(self, ax, plotted):
    if plotted:
      ax.set_xscale("log", base=2)
      ax.set_yscale("log")
      # Plain-text tick labels ("0.001", "1e-05"): no mathtext, which is slow. Minor ticks 2 and 5
      # get labels too when the axis spans under two decades.
      plain = self.ticker.FuncFormatter(lambda v, pos: "%g" % v)

      def minor(v, pos, ax=ax):
        del pos
        lo, hi = ax.get_ylim()
        if v <= 0 or lo <= 0 or hi / lo > 100.0:
          return ""
        mantissa = round(v / 10.0 ** math.floor(math.log10(v) + 1e-9), 6)
        return "%g" % v if mantissa in (2.0, 5.0) else ""

      ax.yaxis.set_major_formatter(plain)
      ax.yaxis.set_minor_formatter(self.ticker.FuncFormatter(minor))
      ax.xaxis.set_major_formatter(plain)
      ax.xaxis.set_minor_formatter(self.ticker.NullFormatter())
      ks = sorted({float(x) for line in ax.get_lines()
                   if line.get_transform() == ax.transData for x in line.get_xdata()})
      if len(ks) <= 12:  # label the measured K values themselves, as integers
        ax.set_xticks(ks)
        ax.set_xticklabels(["%g" % k for k in ks])
        ax.xaxis.set_minor_locator(self.ticker.NullLocator())
    else:
      ax.text(0.5, 0.5, "no plottable values", ha="center", va="center",
              transform=ax.transAxes)
      ax.set_xticks([])
      ax.set_yticks([])

  def new_figure(self, ncols, width, legend):
    """A figure with `ncols` axes side by side and the legend (handle, label) list below them.

    Fixed margins instead of tight_layout/bbox_inches="tight", which cost several extra draws;
    the legend gets as many columns (at most 4) as its longest label allows in `width` inches.
    """
    longest = max([len(label) for _, label in legend] + [1])
    ncol = max(1, min(4, len(legend), int(width / (0.075 * longest + 0.7))))
    axes_h, top_h, bottom_h, row_h = 3.0, 0.65, 0.6, 0.2
    rows = (len(legend) + ncol - 1) // ncol
    legend_h = rows * row_h + 0.1
    height = axes_h + top_h + bottom_h + legend_h
    fig = self.plt.figure(figsize=(width, height))
    axes = fig.subplots(1, ncols, gridspec_kw={
        "left": 0.8 / width, "right": 1.0 - 0.2 / width, "wspace": 0.25,
        "bottom": (bottom_h + legend_h) / height, "top": 1.0 - top_h / height})
    if legend:
      fig.legend([h for h, _ in legend], [l for _, l in legend], loc="lower center",
                 bbox_to_anchor=(0.5, 0.0), ncol=ncol, frameon=False, fontsize="small")
    return fig, axes

  def _series_legend(self, names, styles, solid_label, dashed_label):
    """One entry per series, then what the solid and the dashed lines show."""
    legend = [(self.Line2D([], [], color=styles[n][0], marker=styles[n][1]), self.label(n))
              for n in names]
    legend.append((self.Line2D([], [], color="black", linestyle="-"), solid_label))
    legend.append((self.Line2D([], [], color="black", linestyle="--"), dashed_label))
    return legend

  @staticmethod
  def _plot_solid_dashed(ax, names, styles, solid, dashed):
    """Per series: solid[name] (with markers) and dashed[name], each an (xs, ys) pair where the
    series has one. Returns whether anything was drawn."""
    any_pts = False
    for name in names:
      colour, marker = styles[name]
      xs, ys = solid.get(name, ([], []))
      if xs:
        ax.plot(xs, ys, color=colour, marker=marker, linestyle="-")
        any_pts = True
      xs, ys = dashed.get(name, ([], []))
      if xs:
        ax.plot(xs, ys, color=colour, linestyle="--")
        any_pts = True
    return any_pts

  def tolerance_figure(self, title, bn_obs, bn_rec, rtol, torch_rtols):
    """Left: bn_max (solid) and rec_bn (dashed); right: rec_rtol and torch's default rtol."""
    names = sorted(set(bn_obs) | set(bn_rec) | set(rtol))
    styles = {n: self.style(n) for n in names}
    any_right = any(rtol.get(n, ([], []))[0] for n in names)
    legend = self._series_legend(names, styles, "observed bn_max", "recommended rec_bn")
    if any_right and torch_rtols:
      legend.append((self.Line2D([], [], color="grey"),
                     "torch default rtol (%s)" % ", ".join(fmt_short(v) for v in torch_rtols)))
    fig, (left, right) = self.new_figure(2, 10.5, legend)
    self._log_axes(left, self._plot_solid_dashed(left, names, styles, bn_obs, bn_rec))
    left.set_xlabel("K (reduction length)")
    left.set_ylabel("bound-normalized error (u·Σ|a·b| units)")
    left.set_title("observed max (solid) and recommended (dashed)", fontsize="medium")
    for name in names:
      colour, marker = styles[name]
      xs, ys = rtol.get(name, ([], []))
      if xs:
        right.plot(xs, ys, color=colour, marker=marker, linestyle="-")
    if any_right:
      for value in torch_rtols:
        right.axhline(value, color="grey", linewidth=1.0, linestyle="-", alpha=0.8)
    self._log_axes(right, any_right)
    right.set_xlabel("K (reduction length)")
    right.set_ylabel("recommended rtol")
    right.set_title("recommended rtol", fontsize="medium")
    fig.suptitle(self.label(title), fontsize="medium")
    return self.to_svg(fig)

  def cross_figure(self, diff, rec, names):
    """diff_bn_max (solid) and rec_bn (dashed) per platform pair."""
    palette = self.plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    styles = {}
    for i, name in enumerate(names):
      styles[name] = (palette(i % palette.N), MARKERS[(i // palette.N) % len(MARKERS)])
    legend = self._series_legend(names, styles, "diff_bn_max", "rec_bn")
    fig, ax = self.new_figure(1, 7.5, legend)
    self._log_axes(ax, self._plot_solid_dashed(ax, names, styles, diff, rec))
    ax.set_xlabel("K (reduction length)")
    ax.set_ylabel("bound-normalized difference")
    ax.set_title("max difference between platforms (solid) and recommended rec_bn (dashed)",
                 fontsize="medium")
    return self.to_svg(fig)


# ----------------------------------------------------------------------------------------------
# Page sections.


def html_table(headers, rows, classes=None):
  """headers: list of (text_html, title_attr); rows: list of lists of cell HTML."""
  out = ["<table>", "<thead><tr>"]
  for text, title in headers:
    attr = ' title="%s"' % esc(title) if title else ""
    out.append("<th%s>%s</th>" % (attr, text))
  out.append("</tr></thead><tbody>")
  for r, row in enumerate(rows):
    out.append("<tr>")
    for c, cell in enumerate(row):
      cls = classes[r][c] if classes else ""
      out.append('<td class="%s">%s</td>' % (cls, cell) if cls else "<td>%s</td>" % cell)
    out.append("</tr>")
  out.append("</tbody></table>")
  return "".join(out)


def generic_table(table):
  headers = []
  for col in table.columns:
    text = esc(col["name"])
    if col["unit"]:
      text += " <span class=\"unit\">[%s]</span>" % esc(col["unit"])
    headers.append((text, col["description"]))
  rows = [[esc(fmt_cell(v)) for v in row] for row in table.rows]
  classes = [["num" if col["type"] != "string" else "" for col in table.columns]
             for _ in table.rows]
  return html_table(headers, rows, classes)


def table_intro(table):
  parts = ['<p class="source">From table <code>%s</code>%s, %d rows.</p>' %
           (esc(table.name), (": " + esc(table.title)) if table.title else "", len(table.rows))]
  if table.description:
    parts.append('<div class="description">%s</div>' % md_block(table.description))
  return "\n".join(parts)


def section_start(table, heading, need, verb):
  """A section's heading and table intro, and whether the table has every column in `need`;
  when it lacks some, a line saying that the section cannot `verb` ("plot", "show") without them
  ends the parts. Returns (parts, complete)."""
  missing = [c for c in need if c not in table.index]
  out = [heading, table_intro(table)]
  if missing:
    out.append("<p>Cannot %s: the table lacks column(s) %s.</p>" %
               (verb, ", ".join("<code>%s</code>" % esc(c) for c in missing)))
  return out, not missing


def tolerance_section(table, plotter):
  out, complete = section_start(
      table, '<h2 id="tolerance">Tolerance by operation and format</h2>',
      ("op", "dtype", "platform", "k", "bn_max", "rec_bn", "rec_rtol"), "plot")
  if not complete:
    return "\n".join(out)
  groups = {}
  for row in table.rows:
    key = (fmt_cell(table.get(row, "op")), fmt_cell(table.get(row, "dtype")))
    groups.setdefault(key, []).append(row)
  if plotter is not None:
    plotter.set_series_order({fmt_cell(table.get(r, "platform")) for r in table.rows})
  for op, dtype in sorted(groups):
    rows = groups[(op, dtype)]
    title = "%s, %s" % (op, dtype)
    out.append('<h3 id="tolerance-%s">%s</h3>' % (slug(op + "-" + dtype), esc(title)))
    grouped = group_max(table, rows, lambda r: fmt_cell(table.get(r, "platform")),
                        ("bn_max", "rec_bn", "rec_rtol", "torch_rtol"))
    bn_obs, d1 = log_points(grouped, "bn_max")
    bn_rec, d2 = log_points(grouped, "rec_bn")
    rtol, d3 = log_points(grouped, "rec_rtol")
    torch_rtols = sorted({v for v in (table.get(r, "torch_rtol") for r in rows)
                          if positive_finite(v)})
    dists = sorted({fmt_cell(table.get(r, "distribution")) for r in rows})
    caption = ("<b>%s.</b> Left: observed maximum bound-normalized error <code>bn_max</code> "
               "(solid, markers) and recommended tolerance <code>rec_bn</code> (dashed), in "
               "units of u·Σ|a<sub>i</sub>b<sub>i</sub>|. Right: recommended "
               "<code>rtol</code> with torch's default rtol as a grey line. One colour per "
               "platform; each point is the maximum over the input distributions (%s) and "
               "any other rows with the same platform and K.%s" %
               (esc(title), esc(", ".join(dists)), esc(dropped_note(d1 + d2 + d3))))
    if plotter is not None:
      svg = plotter.tolerance_figure(title, bn_obs, bn_rec, rtol, torch_rtols)
      out.append("<figure>%s<figcaption>%s</figcaption></figure>" % (svg, caption))
    else:
      out.append('<p class="caption">%s</p>' % caption)
    data_rows = []
    for platform, pts in grouped:
      for k, vals in pts:
        data_rows.append([esc(platform), esc(fmt_cell(k))] +
                         [esc(fmt_cell(vals[c])) for c in ("bn_max", "rec_bn", "rec_rtol")])
    headers = [(h, "") for h in ("platform", "K", "bn_max (max)", "rec_bn (max)",
                                 "rec_rtol (max)")]
    out.append("<details><summary>Plotted values</summary>%s</details>" %
               html_table(headers, data_rows))
  return "\n".join(out)


def cross_section(table, plotter):
  out, complete = section_start(
      table, '<h2 id="cross-platform">Cross-platform differences</h2>',
      ("name", "k", "diff_bn_max", "rec_bn"), "plot")
  if not complete:
    return "\n".join(out)
  # A pair name seen with several (op, dtype) combinations gets them in its label.
  combos = {}
  for row in table.rows:
    name = fmt_cell(table.get(row, "name"))
    combos.setdefault(name, set()).add(
        (fmt_cell(table.get(row, "op")), fmt_cell(table.get(row, "dtype"))))

  def series(row):
    name = fmt_cell(table.get(row, "name"))
    if len(combos[name]) <= 1:
      return name
    return "%s (%s %s)" % (name, fmt_cell(table.get(row, "op")), fmt_cell(table.get(row, "dtype")))

  grouped = group_max(table, table.rows, series, ("diff_bn_max", "rec_bn"))
  diff, d1 = log_points(grouped, "diff_bn_max")
  rec, d2 = log_points(grouped, "rec_bn")
  names = [s for s, _ in grouped]
  dists = sorted({fmt_cell(table.get(r, "distribution")) for r in table.rows})
  caption = ("<b>Cross-platform differences.</b> Maximum bound-normalized difference between "
             "the two platforms of each pair <code>diff_bn_max</code> (solid, markers) and the "
             "recommended tolerance <code>rec_bn</code> (dashed) against K; each point is the "
             "maximum over the input distributions (%s).%s" %
             (esc(", ".join(dists)), esc(dropped_note(d1 + d2))))
  if plotter is not None:
    out.append("<figure>%s<figcaption>%s</figcaption></figure>" %
               (plotter.cross_figure(diff, rec, names), caption))
  else:
    out.append('<p class="caption">%s</p>' % caption)
  data_rows = [[esc(s), esc(fmt_cell(k)), esc(fmt_cell(v["diff_bn_max"])),
                esc(fmt_cell(v["rec_bn"]))] for s, pts in grouped for k, v in pts]
  headers = [(h, "") for h in ("pair", "K", "diff_bn_max (max)", "rec_bn (max)")]
  out.append("<details><summary>Plotted values</summary>%s</details>" %
             html_table(headers, data_rows))
  return "\n".join(out)


def fmt_percent(v):
  if v is None:
    return "n/a"
  if isinstance(v, float) and not math.isfinite(v):
    return fmt_cell(v)
  return "%.1f%%" % (100.0 * v)


def power_section(table):
  out, complete = section_start(
      table, '<h2 id="power">Rejection power</h2>',
      ("dtype", "platform", "mutation", "k", "rejected_assert_close"), "show")
  if not complete:
    return "\n".join(out)
  rows = [r for r in table.rows if table.get(r, "distribution") == "normal"] \
      if "distribution" in table.index else list(table.rows)
  if not rows:
    out.append('<p>No rows for distribution "normal".</p>')
    return "\n".join(out)
  has_op = "op" in table.index and len({table.get(r, "op") for r in rows}) > 1
  cells = {}
  ks = set()
  for row in rows:
    k = table.get(row, "k")
    if k is None:
      continue
    ks.add(k)
    key = tuple(fmt_cell(table.get(row, c))
                for c in (("op",) if has_op else ()) + ("dtype", "platform", "mutation"))
    v = table.get(row, "rejected_assert_close")
    cells.setdefault(key, {}).setdefault(k, []).append(v)
  ks = sorted(ks, key=k_key)
  key_names = (["op"] if has_op else []) + ["dtype", "platform", "mutation"]
  headers = [(esc(n), "") for n in key_names] + \
      [("K=%s" % esc(fmt_cell(k)), "") for k in ks]
  body = []
  classes = []
  for key in sorted(cells):
    line = [esc(x) for x in key]
    cls = ["" for _ in key]
    for k in ks:
      vals = cells[key].get(k, [])
      present = [v for v in vals if v is not None and not math.isnan(v)]
      v = min(present) if present else (vals[0] if vals else None)
      line.append(esc(fmt_percent(v)))
      weak = v is not None and math.isfinite(v) and v < WEAK_POWER
      cls.append("num weak" if weak else "num")
    body.append(line)
    classes.append(cls)
  out.append(
      "<p>Fraction of deliberately wrong results (mutations) that "
      "<code>torch.testing.assert_close</code> with the recommended tolerances rejects "
      "(column <code>rejected_assert_close</code>), inputs from distribution "
      "<code>normal</code>. Cells below %d%% are <span class=\"weak\">highlighted</span>: "
      "that tolerance lets most such bugs pass. n/a: the mutation does not apply. Where "
      "several rows share a cell, the lowest fraction is shown.</p>" % int(100 * WEAK_POWER))
  col_doc = table.columns[table.index["rejected_assert_close"]]["description"]
  if col_doc:
    out.append('<p class="source">Column <code>rejected_assert_close</code>: %s</p>' %
               md_inline(col_doc))
  out.append(html_table(headers, body, classes))
  return "\n".join(out)


def generic_section(table):
  heading = table.title or table.name
  out = ['<h2 id="table-%s">%s</h2>' % (slug(table.name), esc(heading)), table_intro(table)]
  out.append(generic_table(table))
  return "\n".join(out)


CSS = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 75em; padding: 0 1em;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.weak, td.weak { background: #f8c0c0; }
.unit { font-weight: normal; color: #666; }
.prov td { white-space: pre-wrap; font-family: monospace; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
figcaption, .caption { font-size: 0.9em; color: #333; }
.source { color: #666; font-size: 0.9em; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""


def build_page(provenance, tables, plotter):
  by_name = {}
  for t in tables:
    by_name.setdefault(t.name, t)  # the first table of a name wins
  sections = []
  toc = []

  def add(anchor, label, body):
    toc.append('<li><a href="#%s">%s</a></li>' % (anchor, esc(label)))
    sections.append(body)

  if plotter is None:
    sections.append('<p class="caption">Figures omitted (written with --no-plots); the values '
                    'they would show are in the "Plotted values" tables.</p>')
  t = by_name.get("tolerance")
  if t is not None and t.rows:
    add("tolerance", "Tolerance by operation and format", tolerance_section(t, plotter))
  t = by_name.get("cross_platform")
  if t is not None and t.rows:
    add("cross-platform", "Cross-platform differences", cross_section(t, plotter))
  t = by_name.get("power")
  if t is not None and t.rows:
    add("power", "Rejection power", power_section(t))
  seen = set(SPECIAL_TABLES)
  ordered = [by_name[n] for n in GENERIC_FIRST if n in by_name]
  ordered += [x for x in tables if x.name not in GENERIC_FIRST and x.name not in seen and
              by_name[x.name] is x]
  for t in ordered:
    if t.name in seen:
      continue
    seen.add(t.name)
    if t.rows:
      add("table-" + slug(t.name), t.title or t.name, generic_section(t))
  # Provenance last: the answers come first (the model hashes and versions are for reproducing).
  prov_rows = [[esc(k), esc(v)] for k, v in provenance]
  add("provenance", "Provenance",
      '<h2 id="provenance">Provenance</h2>\n<div class="prov">%s</div>' %
      html_table([("key", ""), ("value", "")], prov_rows))
  title = "fpconform tolerance report"
  version = dict(provenance).get("fpconform version")
  parts = [
      "<!DOCTYPE html>",
      '<html lang="en">',
      "<head>",
      '<meta charset="utf-8">',
      "<title>%s</title>" % esc(title),
      "<style>%s</style>" % CSS,
      "</head>",
      "<body>",
      "<h1>%s</h1>" % esc(title),
  ]
  if version:
    parts.append('<p class="source">Written from report.json of fpconform %s by '
                 'reports/plot_report.py.</p>' % esc(version))
  parts.append("<nav><ul>%s</ul></nav>" % "".join(toc))
  parts.extend(sections)
  parts.extend(["</body>", "</html>", ""])
  return "\n".join(parts)


def write_atomic(path, text):
  directory = os.path.dirname(os.path.abspath(path))
  fd, tmp = tempfile.mkstemp(prefix=".plot_report.", dir=directory)
  try:
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
      f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
  except BaseException:
    try:
      os.unlink(tmp)
    except OSError:
      pass
    raise


USAGE = "usage: %s [--no-plots] REPORT_JSON OUT_HTML" % PROG


def main(argv):
  args = list(argv)
  no_plots = False
  if "--no-plots" in args:
    no_plots = True
    args.remove("--no-plots")
  if any(a in ("-h", "--help") for a in args):
    print(USAGE)
    print(__doc__.split("\n\n")[0])
    return 0
  if len(args) != 2 or any(a.startswith("--") for a in args):
    print(USAGE, file=sys.stderr)
    return 2
  in_path, out_path = args
  try:
    provenance, tables = load_report(in_path)
  except ReportError as e:
    print("%s: %s: %s" % (PROG, in_path, e), file=sys.stderr)
    return 2
  plotter = None
  if not no_plots:
    try:
      plotter = Plotter()
    except ImportError as e:
      print("%s: matplotlib is not importable (%s); rerun with --no-plots for the page "
            "without figures" % (PROG, e), file=sys.stderr)
      return 3
  page = build_page(provenance, tables, plotter)
  try:
    write_atomic(out_path, page)
  except OSError as e:
    print("%s: %s: cannot write: %s" % (PROG, out_path, e.strerror or e), file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
