"""What every benchmark shares: a monotonic clock, medians, and Markdown tables.

Tables are Markdown so the figures can be pasted into docs/performance.md as they are printed."""

import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # so `python benchmarks/run.py` works as well as `python -m benchmarks.run`
    sys.path.insert(0, str(REPO))

clock = time.perf_counter


def median(samples):
    return statistics.median(samples)


def percentile(samples, fraction):
    """Nearest-rank percentile of a list of numbers (fraction 0..1)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def ms(seconds):
    return f"{seconds * 1e3:,.2f}" if seconds < 10 else f"{seconds * 1e3:,.0f}"


def us(seconds):
    return f"{seconds * 1e6:,.2f}"


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}x"


def verdict(met):
    return "met" if met else "MISSED"


def print_table(title, headers, rows, notes=()):
    print(f"\n### {title}\n")
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    for note in notes:
        print(f"\n{note}")
    sys.stdout.flush()


def load():
    """The 1- and 5-minute load averages: figures taken on a busy machine say so."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {len(os.sched_getaffinity(0))} cores"


def machine():
    cores = len(os.sched_getaffinity(0))
    return (
        f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
        f"{cores} cores, {platform.platform(terse=True)}"
    )
