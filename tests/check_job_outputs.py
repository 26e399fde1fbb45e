#!/usr/bin/python3
"""Checks what the main job wrote for PREFIX, as a reader would meet it:

- PREFIX.report.md renders with cmark-gfm (tables on) into well-formed HTML: every table
  row has as many cells as its header, every markdown table line becomes a table row, and
  no markup is left literal (no `**` in the text);
- every SVG (PREFIX.curve.svg and any other PREFIX.*.svg) is well-formed XML and renders
  with rsvg-convert into a PNG;
- PREFIX.summary.json is valid JSON whose chosen plan is the report's.

Usage: check_job_outputs.py PREFIX. Prints one line per problem; exit status 1 when there
is one, 77 when cmark-gfm or rsvg-convert is missing (tools/setup installs both)."""
import glob
import html.parser
import json
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

problems = []


def problem(text):
    problems.append(text)


def cells(line):
    """The cells of a markdown table line: split on pipes not escaped by a backslash."""
    inner = line.strip()[1:-1]
    return re.split(r"(?<!\\)\|", inner)


class Tables(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append(0)
        elif tag in ("td", "th"):
            self.rows[-1] += 1

    def handle_data(self, data):
        self.text.append(data)


def check_markdown(path):
    text = open(path, encoding="utf-8").read()
    table_lines = [line for line in text.splitlines() if line.startswith("|")]
    header = None
    for line in table_lines:
        n = len(cells(line))
        if re.fullmatch(r"\|(\s*-+:?\s*\|)+", line.strip()):
            continue
        if header is None or line.strip().startswith("| algorithm") or \
                line.strip().startswith("| device"):
            header = n
        elif n != header:
            problem(f"{path}: a table row has {n} cells, its header {header}: {line}")
    rendered = subprocess.run(["cmark-gfm", "-e", "table", path], capture_output=True,
                              text=True, check=True).stdout
    parser = Tables()
    parser.feed(rendered)
    rows = len([line for line in table_lines
                if not re.fullmatch(r"\|(\s*-+:?\s*\|)+", line.strip())])
    if len(parser.rows) != rows:
        problem(f"{path}: {rows} table lines in the markdown, {len(parser.rows)} rows rendered")
    plain = "".join(parser.text)
    if "**" in plain:
        problem(f"{path}: literal ** in the rendered text")
    chosen = re.search(r"^Chosen: \*\*(.*?)\*\*", text, re.M)
    return chosen.group(1).replace("\\", "") if chosen else None


def check_bound(prefix, summary):
    """The bound is the larger of its two parts, and never below the bound were
    communication free."""
    bound, parts = summary["lower_bound_seconds"], summary["lower_bound_parts"]
    larger = max(parts["work_and_paths_seconds"], parts["links_seconds"])
    if abs(bound - larger) > 1e-9 * max(1.0, bound) or \
            parts["without_links_seconds"] > bound * (1 + 1e-12):
        problem(f"{prefix}.summary.json: lower bound {bound} against its parts {parts}")


def check_measurements(prefix, summary):
    """Every measured row carries its measurement (spread, stability), and the report's
    table marks as many rows unstable (**!**) and likely disturbed (**†**) as the summary
    says."""
    unstable = disturbed = 0
    for row in summary["rows"]:
        m = row["measurement"]
        if (row["measured_seconds"] is None) != (m is None):
            problem(f"{prefix}.summary.json: {row['name']}: measured_seconds and measurement "
                    "disagree")
            continue
        if m is None:
            continue
        if not (m["iqr_spread"] >= 0 and m["min_seconds"] <= m["median_seconds"] <= m["max_seconds"]
                and isinstance(m["unstable"], bool) and m["rounds"] >= 1):
            problem(f"{prefix}.summary.json: {row['name']}: a measurement out of shape: {m}")
        unstable += m["unstable"]
        disturbed += m["likely_disturbed"]
    table = [line for line in open(prefix + ".report.md", encoding="utf-8")
             if line.startswith("| ")]
    for mark, n, what in (("**!**", unstable, "unstable"), ("**†**", disturbed, "disturbed")):
        marked = sum(mark in line for line in table)
        if marked != n:
            problem(f"{prefix}.report.md: {marked} rows marked {mark}, the summary has {n} "
                    f"{what}")


def check_svg(path):
    try:
        ElementTree.parse(path)
    except ElementTree.ParseError as error:
        problem(f"{path}: not well-formed XML: {error}")
        return
    with tempfile.NamedTemporaryFile(suffix=".png") as png:
        result = subprocess.run(["rsvg-convert", "-o", png.name, path], capture_output=True,
                                text=True)
        if result.returncode != 0 or not open(png.name, "rb").read(8).startswith(b"\x89PNG"):
            problem(f"{path}: rsvg-convert failed: {result.stderr.strip()}")


def main():
    if len(sys.argv) != 2:
        print("usage: check_job_outputs.py PREFIX", file=sys.stderr)
        return 2
    for tool in ("cmark-gfm", "rsvg-convert"):
        if not shutil.which(tool):
            print(f"check_job_outputs.py: {tool} is missing (tools/setup installs it)")
            return 77
    prefix = sys.argv[1]
    chosen = check_markdown(prefix + ".report.md")
    for svg in sorted(glob.glob(glob.escape(prefix) + ".*svg")):
        check_svg(svg)
    try:
        summary = json.load(open(prefix + ".summary.json", encoding="utf-8"))
        name = summary["chosen"]["name"] if summary.get("chosen") else None
        if summary.get("format") != "placer-summary" or name != chosen:
            problem(f"{prefix}.summary.json: chosen {name!r}, the report's {chosen!r}")
        check_measurements(prefix, summary)
        check_bound(prefix, summary)
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem(f"{prefix}.summary.json: {error}")
    for text in problems:
        print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
