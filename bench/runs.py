#!/usr/bin/env python3
"""bench/runs.py: keep bench/runs/ small, indexed and free of machine paths.

Every benchmark run behind a figure the docs quote is committed (its summary, its parsed
numbers, a NOTE.md with the question), but its raw logs are packed into one compressed
archive, so a run adds a handful of files and some tens of KiB.

    bench/runs.py pack DIR    raw/, configs/, servers/ and any file beyond the kept ones
                              into DIR/raw.tar.xz (each bench script does this at its end)
    bench/runs.py index       write bench/runs/README.md: every run with its date, commit,
                              command, whether the machine was quiet, and where it is cited
    bench/runs.py check       what scripts/test.sh runs: the index is current, no run
                              holds more than MAX_FILES files or MAX_BYTES bytes, and no
                              text names a path of the machine that ran it
"""

import pathlib
import re
import sys
import tarfile

REPO = pathlib.Path(__file__).resolve().parent.parent
RUNS = REPO / "bench" / "runs"
INDEX = RUNS / "README.md"
# What a run keeps unpacked: the files the docs and notes link to.
KEPT = {"summary.md", "results.jsonl", "NOTE.md", "raw.tar.xz"}
KEPT_SUFFIXES = (".toml", ".conf", ".cfg")
MAX_FILES = 8
MAX_BYTES = 100 * 1024
# Where a run's figures may be quoted.
CITING = ["README.md", "docs", "bench", "crates"]
MACHINE_PATH = re.compile(r"(/work/|/tmp/|/root/|/home/)[\w./-]*")


def pack(run: pathlib.Path) -> None:
    """Moves everything but the kept files into run/raw.tar.xz (added to, if it exists)."""
    loose = [p for p in sorted(run.iterdir()) if not kept(p)]
    if not loose:
        return
    archive = run / "raw.tar.xz"
    fresh = run / "raw.tar.xz.new"
    with tarfile.open(fresh, "w:xz") as tar:
        if archive.exists():
            with tarfile.open(archive) as old:
                for member in old.getmembers():
                    data = old.extractfile(member) if member.isfile() else None
                    tar.addfile(member, data)
        for p in loose:
            tar.add(p, arcname=p.name)
    fresh.replace(archive)
    for p in loose:
        remove(p)


def kept(p: pathlib.Path) -> bool:
    return p.is_file() and (p.name in KEPT or p.suffix in KEPT_SUFFIXES)


def remove(p: pathlib.Path) -> None:
    if p.is_dir():
        for child in p.iterdir():
            remove(child)
        p.rmdir()
    elif p.exists():
        p.unlink()


def field(text: str, name: str) -> str:
    """The value of a summary's `- name: value` line."""
    m = re.search(rf"^- {name}: (.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def describe(run: pathlib.Path) -> dict:
    summary = (run / "summary.md").read_text() if (run / "summary.md").exists() else ""
    note = (run / "NOTE.md").read_text() if (run / "NOTE.md").exists() else ""
    command = field(summary, "command").strip("`") or first_code(summary)
    commit = re.search(r"commit ([0-9a-f]{7,12})|git ([0-9a-f]{7,12})", summary)
    problems = re.search(r"Problems seen[^\n]*\n+((?:- .*\n?)+)", summary)
    if problems:
        quiet = f"contended in {len(problems.group(1).splitlines())} run(s)"
    elif "the host during that run" in summary:
        quiet = "quiet"
    else:
        # Runs before compare.sh read /proc/stat's steal and PSI around each run.
        quiet = "not read"
    question = next((l for l in note.splitlines()[1:] if l.strip()), "").strip()
    return {
        "run": run.name,
        "commit": next((g for g in commit.groups() if g), "")[:7] if commit else "",
        "command": command,
        "quiet": quiet,
        "question": question,
    }


def first_code(text: str) -> str:
    m = re.search(r"`([^`]*(?:\.sh|sluice )[^`]*)`", text)
    return m.group(1) if m else ""


def citations() -> dict:
    """Run name -> the files (outside bench/runs) that name it."""
    names = {p.name for p in RUNS.iterdir() if p.is_dir()}
    cited: dict = {n: [] for n in names}
    for root in CITING:
        path = REPO / root
        files = [path] if path.is_file() else path.rglob("*")
        for f in files:
            if not f.is_file() or RUNS in f.parents or f.suffix not in {".md", ".sh", ".rs", ".py"}:
                continue
            text = f.read_text(errors="replace")
            for n in re.findall(r"20\d\d-\d\d-\d\d-[a-z0-9-]+", text):
                n = n.rstrip("-")
                if n in cited and str(f.relative_to(REPO)) not in cited[n]:
                    cited[n].append(str(f.relative_to(REPO)))
    return cited


def index_text() -> str:
    cited = citations()
    rows = []
    for run in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        d = describe(run)
        where = ", ".join(cited[run.name]) or "-"
        command = d["command"].replace("|", "\\|")
        rows.append(
            f"| [{d['run']}]({d['run']}/) | {d['commit'] or '-'} | `{command}` | {d['quiet']} | {where} |"
        )
    head = [
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
    ]
    return "\n".join(head + rows) + "\n"


def check() -> list:
    problems = []
    if not INDEX.exists() or INDEX.read_text() != index_text():
        problems.append("bench/runs/README.md is not current: run bench/runs.py index")
    for run in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        files = [f for f in run.rglob("*") if f.is_file()]
        size = sum(f.stat().st_size for f in files)
        if len(files) > MAX_FILES or size > MAX_BYTES:
            problems.append(f"{run.name}: {len(files)} files, {size // 1024} KiB: run bench/runs.py pack")
        for f in files:
            if f.suffix in {".md", ".jsonl"}:
                m = MACHINE_PATH.search(f.read_text(errors="replace"))
                if m:
                    problems.append(f"{f.relative_to(REPO)}: names a machine path ({m.group(0)})")
    return problems


def main(argv: list) -> int:
    if argv[1:2] == ["pack"] and len(argv) == 3:
        pack(pathlib.Path(argv[2]))
    elif argv[1:] == ["index"]:
        INDEX.write_text(index_text())
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
