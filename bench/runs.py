#!/usr/bin/env python3
"""bench/runs.py: keep bench/runs/ and lab/runs/ small, indexed and free of machine paths.

Every run behind a figure the docs quote is committed: the files the docs link to (a
benchmark's summary and parsed numbers; a lab experiment's report and what it printed; a
NOTE.md where something needs saying), and one compressed archive with the rest (raw
logs, generated configs, server logs; the lab's HTML page and JSON), so a run adds a
handful of files and some tens of KiB. A benchmark run is bench/runs/RUN; a lab run,
lab/runs/DATE/EXPERIMENT (what `sluice lab --out` wrote there).

    bench/runs.py pack DIR... everything in run DIR but its kept files into
                              DIR/raw.tar.xz, machine paths in every kept file and
                              archived one replaced (each bench script does this at its
                              end; after `sluice lab --out lab/runs/DATE/EXPERIMENT`, run it
                              on that directory; run again, it scrubs a run packed before)
    bench/runs.py index       write bench/runs/README.md and lab/runs/README.md: every run
                              with what it ran, how the machine was, and where it is cited
    bench/runs.py check       what scripts/test.sh runs: both indexes are current, every
                              run sits where its tree puts runs, none holds more than
                              MAX_FILES files or MAX_BYTES bytes, and no text, kept or
                              archived, names a path of the machine that ran it
"""

import dataclasses
import fnmatch
import io
import pathlib
import re
import sys
import tarfile
from typing import Callable

REPO = pathlib.Path(__file__).resolve().parent.parent
MAX_FILES = 8
MAX_BYTES = 100 * 1024
# Where a run's figures may be quoted (the run trees themselves excepted).
CITING = ["README.md", "docs", "bench", "crates", "lab"]
# A path of the machine that ran a run: its checkouts and builds (/work/), its scratch
# directories, its home directories. Not one inside another path (<repo>/tmp/, a URL's).
MACHINE_PATH = re.compile(r"(?<![\w.>~/-])/(work|tmp|root|home)/([\w.+-]*)(/?)")
DATE = re.compile(r"20\d\d-\d\d-\d\d")


@dataclasses.dataclass
class Tree:
    """A directory of runs, and all that differs between bench's and the lab's."""

    root: pathlib.Path
    # 1: ROOT/RUN; 2: ROOT/DATE/EXPERIMENT.
    depth: int
    # What a run keeps unpacked: the files the docs and notes link to.
    kept: set
    kept_suffixes: tuple
    # The runs a text names, as patterns of run names (ROOT-relative).
    named: Callable[[str], list]
    # The index: its opening lines (title, what a run holds, the columns) and a run's row.
    head: list
    row: Callable[[pathlib.Path, str], str]

    @property
    def index(self) -> pathlib.Path:
        return self.root / "README.md"

    def runs(self) -> list:
        dirs = [p for p in self.root.iterdir() if p.is_dir()]
        if self.depth == 2:
            dirs = [run for d in dirs for run in d.iterdir() if run.is_dir()]
        return sorted(dirs)

    def name(self, run: pathlib.Path) -> str:
        return run.relative_to(self.root).as_posix()


def placeholder(m: re.Match) -> str:
    """What a machine path becomes: <repo> for a checkout, <baseline> and <target> for
    the binaries built elsewhere, <tmp> for a scratch directory, ~ for a home."""
    top, first, slash = m.groups()
    if top == "work":
        if first == "baseline":
            return "<baseline>" + slash
        return ("<target>" if first.startswith("target") else "<repo>") + slash
    if top == "home":
        return "~" + slash
    return ("<tmp>/" if top == "tmp" else "~/") + first + slash


def scrub(text: str) -> str:
    return MACHINE_PATH.sub(placeholder, text)


def tree_of(run: pathlib.Path) -> "Tree":
    """The tree a run directory belongs to (bench's, for one outside both)."""
    run = run.resolve()
    return LAB if LAB.root in run.parents else BENCH


def pack(run: pathlib.Path) -> None:
    """Moves everything but the kept files into run/raw.tar.xz (added to, if it exists),
    and replaces machine paths in the kept text files and in every archived file."""
    tree = tree_of(run)
    for p in sorted(run.iterdir()):
        if kept(tree, p) and p.name != "raw.tar.xz":
            text = p.read_text(errors="surrogateescape")
            if scrub(text) != text:
                p.write_text(scrub(text), errors="surrogateescape")
    loose = [p for p in sorted(run.iterdir()) if not kept(tree, p)]
    archive = run / "raw.tar.xz"
    if not loose and not (archive.exists() and machine_paths(archive)):
        return
    fresh = run / "raw.tar.xz.new"
    with tarfile.open(fresh, "w:xz") as tar:
        if archive.exists():
            with tarfile.open(archive) as old:
                for member in old.getmembers():
                    data = old.extractfile(member).read() if member.isfile() else None
                    add(tar, member, data)
        for p in loose:
            for f in [p] + sorted(p.rglob("*")):
                info = tar.gettarinfo(f, arcname=str(f.relative_to(run)))
                add(tar, info, f.read_bytes() if info.isfile() else None)
    fresh.replace(archive)
    for p in loose:
        remove(p)


def add(tar: tarfile.TarFile, info: tarfile.TarInfo, data) -> None:
    """Adds one member, its text scrubbed of machine paths."""
    if data is not None:
        data = scrub(data.decode(errors="surrogateescape")).encode(errors="surrogateescape")
        info.size = len(data)
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def machine_paths(archive: pathlib.Path) -> list:
    """(member, the path it names) for each archived file that names a machine path."""
    found = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile():
                m = MACHINE_PATH.search(tar.extractfile(member).read().decode(errors="replace"))
                if m:
                    found.append((member.name, m.group(0)))
    return found


def kept(tree: Tree, p: pathlib.Path) -> bool:
    return p.is_file() and (p.name in tree.kept or p.suffix in tree.kept_suffixes)


def remove(p: pathlib.Path) -> None:
    if p.is_dir():
        for child in p.iterdir():
            remove(child)
        p.rmdir()
    elif p.exists():
        p.unlink()


def read(p: pathlib.Path) -> str:
    return p.read_text() if p.exists() else ""


def field(text: str, name: str) -> str:
    """The value of a summary's `- name: value` line."""
    m = re.search(rf"^- {name}: (.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def commit_in(text: str) -> str:
    commit = re.search(r"commit ([0-9a-f]{7,12})|git ([0-9a-f]{7,12})", text)
    return next((g for g in commit.groups() if g), "")[:7] if commit else ""


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def bench_row(run: pathlib.Path, where: str) -> str:
    summary = read(run / "summary.md")
    command = field(summary, "command").strip("`") or first_code(summary)
    problems = re.search(r"Problems seen[^\n]*\n+((?:- .*\n?)+)", summary)
    if problems:
        quiet = f"contended in {len(problems.group(1).splitlines())} run(s)"
    elif "the host during that run" in summary:
        quiet = "quiet"
    else:
        # Runs before compare.sh read /proc/stat's steal and PSI around each run.
        quiet = "not read"
    name = run.name
    commit = commit_in(summary) or "-"
    return f"| [{name}]({name}/) | {commit} | `{cell(command)}` | {quiet} | {where} |"


def first_code(text: str) -> str:
    m = re.search(r"`([^`]*(?:\.sh|sluice )[^`]*)`", text)
    return m.group(1) if m else ""


def lab_row(run: pathlib.Path, where: str) -> str:
    report, output, note = (read(run / f) for f in ("report.txt", "output.txt", "NOTE.md"))
    # sluice lab --out writes its command line and version atop report.txt (since
    # 2026-11-29); earlier runs have them in output.txt or NOTE.md, if anywhere.
    firsts = [text.splitlines()[0] for text in (output, report) if text]
    said = [line[2:] for line in firsts if line.startswith("$ ")]
    command = said[0] if said else field(note, "command").strip("`")
    contended = report.count("the machine's CPUs were contended")
    machine = f"contended in {contended} step(s)" if contended else "no contention found"
    date, experiment = run.parent.name, run.name
    commit = commit_in(note + output + report[:300]) or "-"
    return (
        f"| {date} | [{experiment}]({date}/{experiment}/) | {commit}"
        f" | {f'`{cell(command)}`' if command else '-'} | {machine} | {cell(verdict(report))}"
        f" | {proof(report)} | {where} |"
    )


def verdict(report: str) -> str:
    """The report's verdict line, to the first resource it names as saturated."""
    m = re.search(r"^Verdict \(([\w-]+)\): (.*)$", report, re.M)
    if not m:
        return "-"
    text = m.group(2)
    end = text.find("was saturated")
    if end >= 0:
        end += len("was saturated")
    else:
        end = text.find("; ") if "; " in text else len(text)
    return f"{m.group(1)}: {text[:end]}" + (" …" if end < len(text) else "")


def proof(report: str) -> str:
    """Whether the proof confirmed the verdict, and the named resource's gain."""
    status = re.search(r"^\s+(not confirmed|confirmed)\b", report, re.M)
    if not status:
        return "-"
    gain = re.search(r"^\s+named\s.*?req/s\s+([+-]\d+%)", report, re.M)
    return status.group(1) + (f", {gain.group(1)}" if gain else "")


def bench_named(text: str) -> list:
    return [n.rstrip("-") for n in re.findall(r"20\d\d-\d\d-\d\d-[a-z0-9-]+", text)]


def lab_named(text: str) -> list:
    # `lab/runs/DATE/<name>/` speaks of every run of that date.
    found = re.findall(r"lab/runs/(20\d\d-\d\d-\d\d)/([a-z0-9-]*[a-z0-9]|<name>)",
                       text)
    return [f"{date}/{'*' if name == '<name>' else name}" for date, name in found]


BENCH = Tree(
    root=REPO / "bench" / "runs",
    depth=1,
    kept={"summary.md", "results.jsonl", "NOTE.md", "raw.tar.xz"},
    kept_suffixes=(".toml", ".conf", ".cfg"),
    named=bench_named,
    head=[
        "# Benchmark runs",
        "",
        "Every run behind a figure the docs quote, one directory each: `summary.md` (the",
        "figures and how they were measured), `results.jsonl` (the parsed numbers), a",
        "`NOTE.md` where a question needs saying, and `raw.tar.xz` (raw logs, generated",
        "configs, server logs). Generated by `bench/runs.py index`; `scripts/test.sh` checks",
        "it is current. \"quiet\": no run of it was disturbed by other guests or programs;",
        "\"contended\": its summary lists the disturbed runs (their numbers are suspect);",
        "\"not read\": the run predates those readings.",
        "",
        "| run | commit | command | machine | cited in |",
        "|---|---|---|---|---|",
    ],
    row=bench_row,
)

LAB = Tree(
    root=REPO / "lab" / "runs",
    depth=2,
    kept={"report.txt", "output.txt", "NOTE.md", "raw.tar.xz"},
    kept_suffixes=(),
    named=lab_named,
    head=[
        "# Lab runs",
        "",
        "Every `sluice lab` run the docs quote, one directory each, `DATE/EXPERIMENT`:",
        "`report.txt` (the report `sluice lab --out` writes: since 2026-11-29 the command and",
        "the build first, then the table, each configuration's evidence, the proof, the",
        "verdict), `output.txt` where kept (all it printed, after the",
        "command as `$ ...` where that was recorded), a `NOTE.md` where something needs saying,",
        "and `raw.tar.xz` (`report.html`, the page; `report.json`; `tiers/`, each step's configs",
        "and logs). After `sluice lab --out lab/runs/DATE/EXPERIMENT`: `bench/runs.py pack",
        "lab/runs/DATE/EXPERIMENT && bench/runs.py index`. Generated by `bench/runs.py index`;",
        "`scripts/test.sh` checks it is current. \"machine\": in how many of the steps the report",
        "judges the machine's CPUs were contended (PSI) while no tier was near its budget (their",
        "numbers are suspect). \"verdict\": the report's, to the first resource it names; \"proof\":",
        "whether the proof runs confirmed it, and the named resource's gain (`-`: no proof run).",
        "",
        "| date | experiment | commit | command | machine | verdict | proof | cited in |",
        "|---|---|---|---|---|---|---|---|",
    ],
    row=lab_row,
)

TREES = [BENCH, LAB]


def citations(tree: Tree) -> dict:
    """Run name -> the files (outside the run trees) that name it."""
    cited: dict = {tree.name(run): [] for run in tree.runs()}
    for root in CITING:
        path = REPO / root
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in files:
            if not f.is_file() or f.suffix not in {".md", ".sh", ".rs", ".py"}:
                continue
            if any(t.root in f.parents for t in TREES):
                continue
            for pattern in tree.named(f.read_text(errors="replace")):
                for n in fnmatch.filter(cited, pattern):
                    if str(f.relative_to(REPO)) not in cited[n]:
                        cited[n].append(str(f.relative_to(REPO)))
    return cited


def index_text(tree: Tree) -> str:
    cited = citations(tree)
    rows = [tree.row(run, ", ".join(cited[tree.name(run)]) or "-") for run in tree.runs()]
    return "\n".join(tree.head + rows) + "\n"


def check() -> list:
    problems = []
    for tree in TREES:
        problems += check_tree(tree)
    return problems


def check_tree(tree: Tree) -> list:
    problems = []
    index = tree.index.relative_to(REPO)
    if not tree.index.exists() or tree.index.read_text() != index_text(tree):
        problems.append(f"{index} is not current: run bench/runs.py index")
    runs = tree.runs()
    layout = f"{tree.root.relative_to(REPO)}/{'DATE/EXPERIMENT' if tree.depth == 2 else 'RUN'}/"
    for f in sorted(tree.root.rglob("*")):
        if f.is_file() and f != tree.index and not any(r in f.parents for r in runs):
            problems.append(f"{f.relative_to(REPO)}: not in a run ({layout})")
    for run in runs:
        where = run.relative_to(REPO)
        if tree.depth == 2 and not DATE.fullmatch(run.parent.name):
            problems.append(f"{where}: not in a dated directory ({layout})")
        files = [f for f in run.rglob("*") if f.is_file()]
        size = sum(f.stat().st_size for f in files)
        if len(files) > MAX_FILES or size > MAX_BYTES:
            problems.append(f"{where}: {len(files)} files, {size // 1024} KiB: run bench/runs.py pack")
        for f in files:
            if f.name == "raw.tar.xz":
                found = machine_paths(f)
                if found:
                    member, path = found[0]
                    problems.append(
                        f"{f.relative_to(REPO)}: {len(found)} files name a machine path"
                        f" ({member}: {path}): run bench/runs.py pack"
                    )
            else:
                m = MACHINE_PATH.search(f.read_text(errors="replace"))
                if m:
                    problems.append(
                        f"{f.relative_to(REPO)}: names a machine path ({m.group(0)}):"
                        " run bench/runs.py pack"
                    )
    return problems


def main(argv: list) -> int:
    if argv[1:2] == ["pack"] and len(argv) >= 3:
        for run in argv[2:]:
            pack(pathlib.Path(run))
    elif argv[1:] == ["index"]:
        for tree in TREES:
            tree.index.write_text(index_text(tree))
    elif argv[1:] == ["check"]:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
