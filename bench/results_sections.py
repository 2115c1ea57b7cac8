"""The sections of bench/RESULTS.md that other benchmarks write.

bench/run writes RESULTS.md (the element-wise table) and appends these;
bench/run_families rewrites its own section in place, so that each
benchmark's latest table is in RESULTS.md whichever ran last.
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "RESULTS.md")
FAMILIES_BEGIN = "<!-- op-families: bench/run_families writes from here -->"
FAMILIES_END = "<!-- /op-families -->"


def _body(path):
    """A results file without its first (title) line."""
    with open(path) as f:
        return f.read().split("\n", 1)[1].strip()


def families():
    """The op-family section: bench/RESULTS-families.md's table and the
    hand-kept notes on it (bench/NOTES-families.md)."""
    table = os.path.join(HERE, "RESULTS-families.md")
    notes = os.path.join(HERE, "NOTES-families.md")
    if not os.path.exists(table):
        return []
    md = [FAMILIES_BEGIN,
          "## Op families (dot, conv, sort, cumulative, FFT, linear algebra), "
          "copied from bench/RESULTS-families.md", "", _body(table), ""]
    if os.path.exists(notes):
        md += ["### Notes (bench/NOTES-families.md)", "", _body(notes), ""]
    return md + [FAMILIES_END, ""]


def gpu():
    """The GPU table, made on the GPU machine (bench/gpu/run.sh, by hand
    into bench/gpu/RESULTS-H200.md)."""
    path = os.path.join(HERE, "gpu", "RESULTS-H200.md")
    if not os.path.exists(path):
        return []
    return ["## GPU (H200), copied from bench/gpu/RESULTS-H200.md", "", _body(path), ""]


def splice_families():
    """Replaces the op-family section of an existing RESULTS.md."""
    if not os.path.exists(RESULTS):
        return
    with open(RESULTS) as f:
        text = f.read()
    section = "\n".join(families())
    pattern = re.compile(re.escape(FAMILIES_BEGIN) + ".*?" + re.escape(FAMILIES_END) + "\n?", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        marker = "## GPU (H200)"
        i = text.find(marker)
        text = text[:i] + section + "\n" + text[i:] if i >= 0 else text.rstrip() + "\n\n" + section
    with open(RESULTS, "w") as f:
        f.write(text)
