"""Bar charts of a benchmark run: for each scenario (P1, P5, ...), Sheaf's figures against the
floor and against each peer measured in the same run, one SVG per scenario id.

    python3 bench/charts.py RESULTS.json DIR        # DIR/P1.svg, DIR/P5.svg, ...

RESULTS.json is what `python3 bench/run.py` saves of a run (`--results FILE`; by default under
build/bench-results/), and `run.py --charts DIR` calls this on the run it has just made. The
charts are drawn from the table's own cells: a row is drawn when Sheaf's cell and the floor /
baseline cell are both a number in the same unit (seconds, MB, MB/s, us, ...). Rows that are not
such a pair (a count of requests, a report without a comparison) are left out, and an id with no
such row gets no chart (its name is printed).

matplotlib is the one requirement (`build/bench-venv/bin/pip install matplotlib`); without it
this prints one line saying so and exits 3, and run.py skips the charts the same way. The SVGs
keep their text as text (searchable, small) and are byte-for-byte the same for the same results.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

FORMAT = "sheaf-bench-results/1"
MISSING = ("matplotlib is not installed (python3 -m venv build/bench-venv && "
           "build/bench-venv/bin/pip install matplotlib)")

# A number and its unit at the start of a cell: "1.287 s", "213 MB/s", "58.4 MB = 2 x 17.3 + 40",
# "0.051 s (page one over a new socket + jansson parse)". Longer units first.
_VALUE = re.compile(r"^\s*(-?\d[\d,]*(?:\.\d+)?)\s*(us/page|B/page|MB/s|MB|ms|us|s)(?![\w/])\s*(.*)$")

SHEAF_COLOUR = "#1f77b4"
FLOOR_COLOUR = "#9a9a9a"
PEER_COLOUR = "#ff7f0e"


@dataclass
class Pair:
    """One row of the table drawn as two bars: Sheaf's value and what it is held against."""
    id: str
    scenario: str
    unit: str
    sheaf: float
    other: float
    other_label: str        # "floor", "requests, serial walk", "C", "curl", ...
    is_floor: bool
    ratio: str              # the table's ratio cell, "1.03x" or "-"
    met: str                # "yes", "NO", "-"


def parse_value(cell: str):
    """(value, unit, the rest of the cell) for a cell that starts with a number and a unit, else None."""
    m = _VALUE.match(cell or "")
    if not m:
        return None
    return float(m.group(1).replace(",", "")), m.group(2), m.group(3).strip()


def _other_label(scenario: str, rest: str, target: str) -> tuple:
    """What the second bar is, and whether it is the floor (grey) or a peer (orange)."""
    name = scenario.strip()
    if name.startswith("baseline:"):
        return name[len("baseline:"):].strip(), False
    if rest.startswith("(") and rest.endswith(")"):
        return rest[1:-1], False
    if rest.startswith("="):
        return "limit " + rest, True
    if rest:
        return rest, False
    if "floor" in target:
        return "floor", True
    against = re.match(r"^\(Sheaf / (.+)\)$", target.strip())
    if against:
        return against.group(1), True          # a reference such as "fetch alone"
    if "baseline" in target:
        return "baseline", False
    return "floor / baseline", True


def pairs(results: dict) -> Dict[str, List[Pair]]:
    """The drawable rows of a results file, by scenario id in the table's order (ids with none
    are present with an empty list)."""
    out: Dict[str, List[Pair]] = {}
    for row in results.get("rows", []):
        id_ = row.get("id", "?")
        out.setdefault(id_, [])
        sheaf, other = parse_value(row.get("sheaf", "")), parse_value(row.get("floor", ""))
        if sheaf is None or other is None or sheaf[1] != other[1]:
            continue
        label, is_floor = _other_label(row.get("scenario", ""), other[2], row.get("target", ""))
        out[id_].append(Pair(id_, row.get("scenario", "").strip(), sheaf[1], sheaf[0], other[0], label,
                             is_floor, row.get("ratio", "-"), row.get("met", "-")))
    return out


def _number(value: float, unit: str) -> str:
    text = f"{value:.3f}" if unit == "s" else (f"{value:.1f}" if value < 100 else f"{value:,.0f}")
    return f"{text} {unit}"


def _file_name(id_: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", id_) + ".svg"


def subtitle(results: dict) -> str:
    parts = [results.get("library", ""), f"tree {results['tree']}" if results.get("tree") else "",
             f"{results['runs']} run(s) per row" if results.get("runs") else ""]
    lines = [", ".join(p for p in parts if p)]
    if results.get("machine"):
        lines.append(results["machine"])
    if results.get("command"):
        lines.append(f"made by: {results['command']}")
    return "\n".join(textwrap.fill(line, 110) for line in lines if line)


def draw(results: dict, out_dir: Path, *, log=print) -> List[Path]:
    """Writes DIR/<id>.svg for every scenario id with a drawable row; returns the files written.
    Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none",     # text stays text: searchable, small
                         "svg.hashsalt": "sheaf-bench",   # the same ids every time
                         "font.size": 9})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, empty = [], []
    header = subtitle(results)
    for id_, rows in pairs(results).items():
        if not rows:
            empty.append(id_)
            continue
        units = list(dict.fromkeys(p.unit for p in rows))     # one panel per unit, table order
        panels = [[p for p in rows if p.unit == u] for u in units]
        # Laid out in inches, top to bottom: the title and the run it shows, a panel per unit
        # (a pair of bars per row, then its axis), the legend.
        width, row_in, axis_in, legend_in = 11.0, 0.62, 0.62, 0.45
        header_in = 0.55 + 0.15 * (header.count("\n") + 1)
        heights = [row_in * len(rows_) + 0.25 for rows_ in panels]
        height = header_in + sum(heights) + axis_in * len(panels) + legend_in
        fig = plt.figure(figsize=(width, height))
        fig.text(0.1 / width, 1 - 0.12 / height, f"{id_}: Sheaf against the floor and its peers", fontsize=12,
                 fontweight="bold", va="top", ha="left")
        fig.text(0.1 / width, 1 - 0.45 / height, header, fontsize=7.5, va="top", ha="left", color="#444444")
        top = height - header_in
        left = 0.34
        for panel_rows, panel_h, unit in zip(panels, heights, units):
            ax = fig.add_axes((left, (top - panel_h) / height, 0.98 - left, panel_h / height))
            _panel(ax, panel_rows, unit)
            top -= panel_h + axis_in
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (SHEAF_COLOUR, FLOOR_COLOUR, PEER_COLOUR)]
        fig.legend(handles, ["Sheaf", "floor (what the latency alone allows) or a limit", "a peer measured in the same run"],
                   loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.05 / height))
        path = out_dir / _file_name(id_)
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(fig)
        written.append(path)
    if empty:
        log(f"charts: nothing to draw for {', '.join(empty)} (no row holds Sheaf's value and a floor or "
            f"peer in the same unit)")
    return written


def _panel(ax, rows: Sequence[Pair], unit: str) -> None:
    """Horizontal bars, a pair per row: Sheaf above, the floor or the peer below."""
    top = max(max(p.sheaf, p.other) for p in rows) or 1.0
    ticks, labels = [], []
    bar = 0.38
    for i, p in enumerate(rows):
        y = len(rows) - 1 - i                      # the table's first row at the top
        ax.barh(y + bar / 2, p.sheaf, height=bar, color=SHEAF_COLOUR)
        ax.barh(y - bar / 2, p.other, height=bar, color=FLOOR_COLOUR if p.is_floor else PEER_COLOUR)
        verdict = {"yes": ", target met", "NO": ", target missed"}.get(p.met.split(" ")[0], "")
        ratio = f"  ({p.ratio}{verdict})" if p.ratio not in ("", "-") else ""
        ax.text(p.sheaf + top * 0.01, y + bar / 2, f"Sheaf {_number(p.sheaf, unit)}{ratio}", va="center", fontsize=8)
        ax.text(p.other + top * 0.01, y - bar / 2, f"{p.other_label}: {_number(p.other, unit)}", va="center",
                fontsize=8, color="#333333")
        ticks.append(y)
        labels.append(textwrap.fill(p.scenario, 50))
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, top * 1.8)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(unit + (" (lower is better)" if unit in ("s", "ms", "us", "us/page", "MB", "B/page") else
                          " (higher is better)"))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def load(path: Path) -> dict:
    results = json.loads(Path(path).read_text())
    if results.get("format") != FORMAT:
        raise ValueError(f"{path}: not a bench/run.py results file (format {results.get('format')!r}, "
                         f"expected {FORMAT!r})")
    return results


def available() -> Optional[str]:
    """None when matplotlib can be imported, else why not (one line)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MISSING
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2 or argv[0].startswith("-"):
        sys.stderr.write("usage: python3 bench/charts.py RESULTS.json DIR\n")
        return 2
    try:
        results = load(Path(argv[0]))
    except (OSError, ValueError) as error:
        sys.stderr.write(f"charts: {error}\n")
        return 2
    why = available()
    if why:
        sys.stderr.write(f"charts: skipped: {why}\n")
        return 3
    for path in draw(results, Path(argv[1]), log=lambda line: sys.stderr.write(line + "\n")):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
