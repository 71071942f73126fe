#!/usr/bin/env python3
"""bench/runs.py: keep bench/runs/ small, indexed and free of machine paths.

Every benchmark run behind a figure the docs quote is committed (its summary, its parsed
numbers, a NOTE.md with the question), but its raw logs are packed into one compressed
archive, so a run adds a handful of files and some tens of KiB.

    bench/runs.py pack DIR... raw/, configs/, servers/ and any file beyond the kept ones
                              into DIR/raw.tar.xz, machine paths in every kept file and
                              archived one replaced (each bench script does this at its end;
                              run again, it scrubs a run packed before)
    bench/runs.py index       write bench/runs/README.md: every run with its date, commit,
                              command, whether the machine was quiet, and where it is cited
    bench/runs.py check       what scripts/test.sh runs: the index is current, no run
                              holds more than MAX_FILES files or MAX_BYTES bytes, and no
                              text, kept or archived, names a path of the machine that
                              ran it
"""

import io
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
# A path of the machine that ran a run: its checkouts and builds (/work/), its scratch
# directories, its home directories. Not one inside another path (<repo>/tmp/, a URL's).
MACHINE_PATH = re.compile(r"(?<![\w.>~/-])/(work|tmp|root|home)/([\w.+-]*)(/?)")


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


def pack(run: pathlib.Path) -> None:
    """Moves everything but the kept files into run/raw.tar.xz (added to, if it exists),
    and replaces machine paths in the kept text files and in every archived file."""
    for p in sorted(run.iterdir()):
        if kept(p) and p.name != "raw.tar.xz":
            text = p.read_text(errors="surrogateescape")
            if scrub(text) != text:
                p.write_text(scrub(text), errors="surrogateescape")
    loose = [p for p in sorted(run.iterdir()) if not kept(p)]
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
                    problems.append(f"{f.relative_to(REPO)}: names a machine path ({m.group(0)}): run bench/runs.py pack")
    return problems


def main(argv: list) -> int:
    if argv[1:2] == ["pack"] and len(argv) >= 3:
        for run in argv[2:]:
            pack(pathlib.Path(run))
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
