"""A matrix run as Markdown (`report.md`, and the GitHub step summary of a matrix batch): two
Mermaid `xychart-beta` charts first (pass@1 and pass@k by combination; cost per success),
which GitHub draws in step summaries and pull-request comments, then the table, then, with
`--compare`, the change against an earlier report, regressions first.

Everything shown comes from `matrix_stats.matrix_section` (numbers this process computed);
the labels are model, harness and profile names the user typed, so they are reduced to a
safe character set before they go into Mermaid strings or table cells: no quote, bracket,
backtick, pipe or line break can end a string, a cell or the code block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compare_rows", "markdown"]

#: What a label keeps: letters, digits and the punctuation of model names.
_UNSAFE = re.compile(r"[^\w .:/@+=-]+", re.ASCII)
_LABEL_MAX = 60


def _label(text: str) -> str:
    safe = _UNSAFE.sub("_", text).strip()
    return (safe[: _LABEL_MAX - 1] + "…") if len(safe) > _LABEL_MAX else (safe or "_")


def _percent(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.1f}%"


def _usd(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _top_k(section: Mapping[str, Any]) -> int:
    return int(section["repeat"])


def _chart(title: str, labels: Sequence[str], axis: str, series: Sequence[str]) -> list[str]:
    names = ", ".join(f'"{_label(label)}"' for label in labels)
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "{title}"',
        f"    x-axis [{names}]",
        f'    y-axis "{axis}"' + (" 0 --> 100" if "%" in axis else ""),
        *(f"    {line}" for line in series),
        "```",
    ]


def _values(values: Sequence[float | None], scale: float, digits: int) -> str:
    # Mermaid needs a number for every bar: an unknown one is drawn as 0 (the table says "–").
    return "[" + ", ".join(f"{round((v or 0.0) * scale, digits):g}" for v in values) + "]"


def charts(section: Mapping[str, Any]) -> list[str]:
    """The two `xychart-beta` blocks."""
    combos = section["combinations"]
    # The values alone: the keys are the same for every bar, and long labels crowd the axis.
    labels = [" / ".join(c["combination"].values()) or c["label"] for c in combos]
    k = _top_k(section)
    first = [c["pass_at"].get("1") for c in combos]
    last = [c["pass_at"].get(str(k)) for c in combos]
    title = f"pass@1 (bars) and pass@{k} (line), %" if k > 1 else "pass@1, %"
    series = [f"bar {_values(first, 100, 1)}"]
    if k > 1:
        series.append(f"line {_values(last, 100, 1)}")
    lines = _chart(title, labels, "pass rate (%)", series)
    costs = [c["cost_per_success_usd"] for c in combos]
    lines.append("")
    lines += _chart("cost per success, USD", labels, "USD", [f"bar {_values(costs, 1, 6)}"])
    return lines


def table(section: Mapping[str, Any]) -> list[str]:
    k = _top_k(section)
    head = ["combination", "tasks", "solved", "runs", "solved runs"]
    head += [f"pass@{i}" for i in range(1, k + 1)]
    head += ["mean turns", "mean time", "cost", "cost per success", "failures"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in section["combinations"]:
        classes = ", ".join(f"{n} {name}" for name, n in c["failure_classes"].items() if n)
        row = [
            _label(c["label"]),
            str(c["tasks"]),
            str(c["solved_tasks"]),
            str(c["runs"]),
            str(c["solved_runs"]),
            *(_percent(c["pass_at"].get(str(i))) for i in range(1, k + 1)),
            _number(c["mean_turns"]),
            "–" if c["mean_duration_s"] is None else f"{c['mean_duration_s']:.1f}s",
            _usd(c["cost_usd"]),
            _usd(c["cost_per_success_usd"]),
            classes or "none",
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _delta(old: float | None, new: float | None, scale: float) -> float | None:
    return None if old is None or new is None else (new - old) * scale


def compare_rows(
    section: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[tuple[str, list[str], bool]]:
    """(label, cells, regressed) per combination of `section` and each one only `old` has,
    regressions first (worst pass@1 drop first), then the rest in the report's order. A
    regression: pass@1 or pass@k lower, or cost per success higher, than before."""
    k = _top_k(section)
    before = {c["label"]: c for c in (old or {}).get("combinations", [])}
    rows: list[tuple[float, int, str, list[str], bool]] = []
    for position, c in enumerate(section["combinations"]):
        prior = before.pop(c["label"], None)
        if prior is None:
            rows.append((0.0, position, c["label"], ["new", "", ""], False))
            continue
        cells: list[str] = []
        regressed = False
        for key in ("1", str(k)):
            was, now = prior["pass_at"].get(key), c["pass_at"].get(key)
            change = _delta(was, now, 100)
            regressed |= change is not None and change < 0
            shift = "" if change is None else f" ({change:+.1f})"
            cells.append(f"{_percent(was)} → {_percent(now)}{shift}")
        was_cost, now_cost = prior["cost_per_success_usd"], c["cost_per_success_usd"]
        cost_change = _delta(was_cost, now_cost, 1)
        regressed |= cost_change is not None and cost_change > 0
        cells.append(f"{_usd(was_cost)} → {_usd(now_cost)}")
        drop = _delta(prior["pass_at"].get("1"), c["pass_at"].get("1"), 1) or 0.0
        rows.append((drop if regressed else 0.0, position, c["label"], cells, regressed))
    for position, label in enumerate(before, start=len(rows)):
        rows.append((0.0, position, label, ["gone", "", ""], False))
    rows.sort(key=lambda row: (not row[4], row[0], row[1]))
    return [(label, cells, regressed) for _, _, label, cells, regressed in rows]


def markdown(
    name: str,
    section: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    old_name: str | None = None,
) -> str:
    """report.md: charts, table, and the comparison with `old` (an earlier `matrix`)."""
    k = _top_k(section)
    lines = [f"## Batch {_label(name)}: model comparison", ""]
    lines += charts(section)
    lines += [""]
    lines += table(section)
    if old is not None:
        lines += ["", f"### Compared with {_label(old_name or 'the earlier report')}", ""]
        lines += [f"| combination | pass@1 | pass@{k} | cost per success |", "|---|---|---|---|"]
        for label, cells, regressed in compare_rows(section, old):
            mark = "⚠️ " if regressed else ""
            lines.append(f"| {mark}{_label(label)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
