#!/usr/bin/python3
"""Tests for reports/plot_report.py (plain unittest; run with /usr/bin/python3).

Builds a small synthetic report.json (2 platforms x 3 K x 2 distributions, with a null cell, an
"inf" float, a zero, an empty table and a missing table), runs the script as a subprocess and
checks the page. Expected values are computed here from the synthetic rows, not taken from the
script's output.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot_report.py")
PYTHON = sys.executable or "/usr/bin/python3"

PLATFORMS = ("nvidia-a100-tc", "trainium2-pe")
KS = (16, 256, 4096)
DISTS = ("normal", "uniform_pm1")

TOL_COLS = [
    ("unit", "int"), ("item", "int"), ("op", "string"), ("dtype", "string"),
    ("platform", "string"), ("input_format", "string"), ("output_format", "string"),
    ("distribution", "string"), ("k", "int"), ("samples", "int"), ("seed", "int"),
    ("ulp_max", "float"), ("ulp_p99", "float"), ("ulp_median", "float"),
    ("bn_max", "float"), ("bn_p99", "float"), ("bn_median", "float"),
    ("rel_max", "float"), ("rel_p99", "float"), ("rel_median", "float"),
    ("bound_ulp", "float"), ("bound_bn", "float"), ("prob_bn", "float"),
    ("rec_ulp", "float"), ("rec_bn", "float"), ("rec_rtol", "float"), ("rec_atol", "float"),
    ("note", "string"), ("torch_rtol", "float"), ("torch_atol", "float"),
    ("torch_rejects", "float"), ("jax_tol", "float"), ("jax_rejects", "float"),
]
CROSS_COLS = [
    ("unit", "int"), ("item", "int"), ("op", "string"), ("dtype", "string"), ("name", "string"),
    ("platform_a", "string"), ("platform_b", "string"), ("distribution", "string"),
    ("k", "int"), ("samples", "int"), ("diff_ulp_max", "float"), ("diff_ulp_p99", "float"),
    ("diff_bn_max", "float"), ("diff_bn_p99", "float"), ("diff_rel_max", "float"),
    ("worst_bn", "float"), ("rec_ulp", "float"), ("rec_bn", "float"), ("rec_rtol", "float"),
    ("rec_atol", "float"),
]
POWER_COLS = [
    ("unit", "int"), ("item", "int"), ("op", "string"), ("dtype", "string"),
    ("platform", "string"), ("distribution", "string"), ("k", "int"), ("mutation", "string"),
    ("rejected_assert_close", "float"), ("rejected_ulp", "float"), ("rejected_bn", "float"),
    ("rejected_torch", "float"), ("rejected_jax", "float"),
]


def columns(spec):
  return [{"name": n, "type": t, "unit": "", "description": "column " + n} for n, t in spec]


def bn_max_of(p, k, d):
  """Synthetic observed error: grows with K, differs per platform and distribution."""
  return (p + 1) * 0.01 * (k ** 0.5) * (1.0 + 0.5 * d)


def tolerance_rows():
  rows = []
  item = 0
  for p, platform in enumerate(PLATFORMS):
    for k in KS:
      for d, dist in enumerate(DISTS):
        row = {n: None for n, _ in TOL_COLS}
        row.update(unit=0, item=item, op="matmul", dtype="bf16", platform=platform,
                   input_format="bfloat16", output_format="float32", distribution=dist, k=k,
                   samples=100, seed=1, bn_max=bn_max_of(p, k, d), rec_bn=2 * bn_max_of(p, k, d),
                   rec_rtol=1e-3 * (p + 1) * (k / 16) ** 0.5, rec_atol=1e-5,
                   torch_rtol=1.6e-2, torch_atol=1e-5, note="")
        item += 1
        rows.append(row)
  # Special cells: an "inf" observation and a zero recommended rtol (both off a log axis), and a
  # null cell (not applicable).
  rows[0]["bn_max"] = "inf"
  # rows[2] and rows[3] are the two distributions of the first platform at K=256, so the max
  # over distributions is 0 too.
  rows[2]["rec_rtol"] = 0.0
  rows[3]["rec_rtol"] = 0.0
  rows[3]["torch_rejects"] = None
  # A second op with a single row, for a second figure.
  extra = dict(rows[-1])
  extra.update(op="sum", item=item, bn_max=0.5, rec_bn=1.0, rec_rtol=1e-4)
  rows.append(extra)
  return [[r[n] for n, _ in TOL_COLS] for r in rows]


def cross_rows():
  rows = []
  for k in KS:
    for d, dist in enumerate(DISTS):
      row = {n: None for n, _ in CROSS_COLS}
      row.update(unit=0, item=len(rows), op="matmul", dtype="bf16",
                 name="a100-vs-trn2", platform_a=PLATFORMS[0], platform_b=PLATFORMS[1],
                 distribution=dist, k=k, samples=100, diff_bn_max=0.02 * k ** 0.5 * (d + 1),
                 rec_bn=0.1 * k ** 0.5, rec_rtol=1e-2)
      rows.append([row[n] for n, _ in CROSS_COLS])
  return rows


# Rejection fractions for (platform, mutation, k) with distribution "normal"; None = n/a.
POWER = {
    (PLATFORMS[0], "drop-last-term", 16): 0.3,
    (PLATFORMS[0], "drop-last-term", 256): 0.9,
    (PLATFORMS[0], "drop-last-term", 4096): None,
    (PLATFORMS[1], "swap-rounding", 16): 1.0,
    (PLATFORMS[1], "swap-rounding", 256): 0.25,
    (PLATFORMS[1], "swap-rounding", 4096): 0.75,
}


def power_rows():
  rows = []
  for (platform, mutation, k), v in sorted(POWER.items(), key=lambda x: str(x[0])):
    for dist in DISTS:
      row = {n: None for n, _ in POWER_COLS}
      # Other distributions get 0.0 everywhere: they must not appear in the table.
      row.update(unit=0, item=len(rows), op="matmul", dtype="bf16", platform=platform,
                 distribution=dist, k=k, mutation=mutation,
                 rejected_assert_close=v if dist == "normal" else 0.0)
      rows.append([row[n] for n, _ in POWER_COLS])
  return rows


def synthetic_report():
  return {
      "fpconform_report": 1,
      "provenance": [["fpconform version", "0.1.0"], ["sweep file", "sweeps/test.toml"],
                     ["seed", "1"], ["rule text", "line one\nline <two> & more"]],
      "tables": [
          {"name": "tolerance", "title": "Tolerances",
           "description": "Measured errors per `platform` and K.\n\nSecond <script>x</script> "
                          "paragraph.\n- item one\n- item `two`",
           "columns": columns(TOL_COLS), "rows": tolerance_rows()},
          {"name": "cross_platform", "title": "Cross-platform", "description": "",
           "columns": columns(CROSS_COLS), "rows": cross_rows()},
          {"name": "power", "title": "Power", "description": "Mutations.",
           "columns": columns(POWER_COLS), "rows": power_rows()},
          {"name": "quantize", "title": "Quantization", "description": "",
           "columns": columns([("format", "string"), ("ulp_max", "float")]), "rows": []},
          {"name": "rubric", "title": "Rubric summary", "description": "How to pick.",
           "columns": columns([("dtype", "string"), ("rtol", "float"), ("count", "int")]),
           "rows": [["bf16", 0.0078125, 3], ["fp8<e4m3>", "nan", None]]},
          # "defaults" is missing on purpose.
      ],
  }


def run(args, preamble=None):
  cmd = [PYTHON]
  if preamble is None:
    cmd += [SCRIPT]
  else:
    # Runs the script after `preamble` (e.g. making matplotlib unimportable).
    cmd += ["-c", preamble + "\nimport runpy, sys\nsys.argv = [%r] + sys.argv[1:]\n"
            "runpy.run_path(%r, run_name='__main__')" % (SCRIPT, SCRIPT)]
  return subprocess.run(cmd + args, capture_output=True, text=True, timeout=120, check=False)


BLOCK_MATPLOTLIB = "import sys\nsys.modules['matplotlib'] = None"


class PlotReportTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.tmp = tempfile.TemporaryDirectory()
    cls.json_path = os.path.join(cls.tmp.name, "report.json")
    with open(cls.json_path, "w", encoding="utf-8") as f:
      json.dump(synthetic_report(), f)
    cls.out1 = os.path.join(cls.tmp.name, "a.html")
    cls.out2 = os.path.join(cls.tmp.name, "b.html")
    cls.r1 = run([cls.json_path, cls.out1])
    cls.r2 = run([cls.json_path, cls.out2])
    with open(cls.out1, "rb") as f:
      cls.page = f.read().decode("utf-8")

  @classmethod
  def tearDownClass(cls):
    cls.tmp.cleanup()

  def render(self, json_path, out_name, *flags, preamble=None):
    """Runs the script on json_path (after flags) into out_name: exit 0; returns the page."""
    out = os.path.join(self.tmp.name, out_name)
    r = run(list(flags) + [json_path, out], preamble=preamble)
    self.assertEqual(r.returncode, 0, r.stderr)
    with open(out, encoding="utf-8") as f:
      return f.read()

  def test_runs_and_is_deterministic(self):
    self.assertEqual(self.r1.returncode, 0, self.r1.stderr)
    self.assertEqual(self.r2.returncode, 0, self.r2.stderr)
    with open(self.out2, "rb") as f:
      self.assertEqual(self.page.encode("utf-8"), f.read())

  def test_sections_and_names(self):
    for heading in ("Provenance", "Tolerance by operation and format",
                    "Cross-platform differences", "Rejection power", "Rubric summary"):
      self.assertRegex(self.page, r"<h2 id=\"[a-z-]+\">%s</h2>" % re.escape(heading))
    self.assertIn("<h3 id=\"tolerance-matmul-bf16\">matmul, bf16</h3>", self.page)
    self.assertIn("<h3 id=\"tolerance-sum-bf16\">sum, bf16</h3>", self.page)
    for name in PLATFORMS + ("a100-vs-trn2",):
      self.assertIn(name, self.page)
    # Empty and missing tables give no section.
    self.assertNotIn("Quantization", self.page)
    self.assertNotIn("defaults", self.page.lower().replace("default rtol", ""))

  def test_figures_are_inline_svg_with_unique_ids(self):
    svgs = re.findall(r"<svg\b.*?</svg>", self.page, flags=re.S)
    self.assertEqual(len(svgs), 3)  # matmul/bf16, sum/bf16, cross-platform
    ids = []
    for svg in svgs:
      root = ET.fromstring(svg)  # well-formed XML
      own = {e.get("id") for e in root.iter() if e.get("id")}
      ids += [e.get("id") for e in root.iter() if e.get("id")]
      refs = set(re.findall(r"url\(#([^)]+)\)", svg)) | set(re.findall(r'href="#([^"]+)"', svg))
      self.assertTrue(refs, "no internal references: the check below would be vacuous")
      self.assertLessEqual(refs, own, "references to ids the figure does not define")
    self.assertEqual(len(ids), len(set(ids)), "duplicate SVG ids across figures")
    # Self-contained: no scripts, stylesheets or fetched resources.
    for bad in ("<script", "<link", "src=", "@import", "url(http"):
      self.assertNotIn(bad, self.page)
    self.assertNotIn("<?xml", self.page)

  def test_escaping_and_markdown(self):
    self.assertIn("<code>platform</code>", self.page)
    self.assertIn("&lt;script&gt;x&lt;/script&gt;", self.page)
    self.assertIn("<li>item <code>two</code></li>", self.page)
    self.assertIn("line &lt;two&gt; &amp; more", self.page)
    self.assertIn("fp8&lt;e4m3&gt;", self.page)

  def test_dropped_points_are_noted(self):
    # rows[0] (first platform, K=16, normal) has bn_max inf; rows[2:4] (K=256) rec_rtol 0.
    self.assertIn("%s bn_max at K=16 (inf)" % PLATFORMS[0], self.page)
    self.assertIn("%s rec_rtol at K=256 (0.0)" % PLATFORMS[0], self.page)

  def test_plotted_values_are_max_over_distributions(self):
    # Expected: for platform 1 at K=4096, max over the two distributions computed here.
    p, k = 1, 4096
    expected = max(bn_max_of(p, k, d) for d in range(len(DISTS)))
    self.assertIn("<td>%s</td><td>%d</td><td>%r</td>" % (PLATFORMS[p], k, expected), self.page)
    # Platform 0 at K=16: one distribution is inf, so the max is inf.
    self.assertIn("<td>%s</td><td>16</td><td>inf</td>" % PLATFORMS[0], self.page)

  def test_power_table(self):
    section = self.page.split('id="power"')[1].split("<h2")[0]
    # Row for platform 0: 30.0% (weak), 90.0% (fine), n/a (null).
    row0 = re.search(r"<tr><td>bf16</td><td>%s</td><td>drop-last-term</td>(.*?)</tr>" %
                     PLATFORMS[0], section).group(1)
    self.assertEqual(row0, '<td class="num weak">30.0%</td><td class="num">90.0%</td>'
                           '<td class="num">n/a</td>')
    row1 = re.search(r"<tr><td>bf16</td><td>%s</td><td>swap-rounding</td>(.*?)</tr>" %
                     PLATFORMS[1], section).group(1)
    self.assertEqual(row1, '<td class="num">100.0%</td><td class="num weak">25.0%</td>'
                           '<td class="num">75.0%</td>')
    self.assertIn("<th>K=16</th><th>K=256</th><th>K=4096</th>", section)

  def test_no_plots_mode_needs_no_matplotlib(self):
    page = self.render(self.json_path, "np.html", "--no-plots", preamble=BLOCK_MATPLOTLIB)
    self.assertNotIn("<svg", page)
    self.assertIn("Tolerance by operation and format", page)
    self.assertIn("Rejection power", page)
    self.assertIn(PLATFORMS[1], page)
    # Same page minus the figures: the non-figure sections are identical.
    self.assertEqual(page.split('id="power"')[1], self.page.split('id="power"')[1])

  def test_exit_3_without_matplotlib(self):
    out = os.path.join(self.tmp.name, "x.html")
    r = run([self.json_path, out], preamble=BLOCK_MATPLOTLIB)
    self.assertEqual(r.returncode, 3)
    self.assertIn("matplotlib", r.stderr)
    self.assertIn("--no-plots", r.stderr)
    self.assertFalse(os.path.exists(out))

  def test_minimal_and_partial_reports(self):
    # Only the marker: provenance heading, no other sections, no figures.
    path = os.path.join(self.tmp.name, "min.json")
    with open(path, "w", encoding="utf-8") as f:
      f.write('{"fpconform_report": 1}')
    page = self.render(path, "min.html")
    self.assertIn("<h2 id=\"provenance\">Provenance</h2>", page)
    self.assertNotIn("<svg", page)
    self.assertNotIn("<h3", page)
    # A tolerance table without rec_rtol: a note naming the column instead of a crash.
    doc = synthetic_report()
    tol = doc["tables"][0]
    drop = [c["name"] for c in tol["columns"]].index("rec_rtol")
    del tol["columns"][drop]
    for row in tol["rows"]:
      del row[drop]
    with open(path, "w", encoding="utf-8") as f:
      json.dump(doc, f)
    page = self.render(path, "min.html")
    self.assertIn("lacks column(s) <code>rec_rtol</code>", page)
    self.assertIn("Cross-platform differences", page)

  def check_exit_2(self, content, expect_in_message):
    path = os.path.join(self.tmp.name, "bad.json")
    with open(path, "w", encoding="utf-8") as f:
      f.write(content)
    out = os.path.join(self.tmp.name, "bad.html")
    r = run([path, out])
    self.assertEqual(r.returncode, 2, r.stderr)
    self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
    self.assertIn(path, r.stderr)
    self.assertIn(expect_in_message, r.stderr)
    self.assertFalse(os.path.exists(out))

  def test_exit_2_on_invalid_json(self):
    self.check_exit_2('{"fpconform_report": 1, "tables": [', "invalid JSON")

  def test_exit_2_without_marker(self):
    self.check_exit_2('{"provenance": [], "tables": []}', "fpconform_report")

  def test_exit_2_on_bad_cell_names_path(self):
    doc = synthetic_report()
    doc["tables"][4]["rows"][1][1] = "fast"  # a string in a float column
    self.check_exit_2(json.dumps(doc), "tables[4].rows[1][1]: expected float, got string")

  def test_exit_2_on_missing_file(self):
    path = os.path.join(self.tmp.name, "does-not-exist.json")
    r = run([path, os.path.join(self.tmp.name, "m.html")])
    self.assertEqual(r.returncode, 2)
    self.assertIn(path, r.stderr)


if __name__ == "__main__":
  unittest.main()
