#!/usr/bin/env python3
"""The command line's conventions, checked on the built CLI (ctest `cli.conventions`):

- every subcommand's --help exits 0, lists its exit codes, and shows its options' defaults;
- every usage error (an unknown option, a malformed value, a missing required option, an
  unknown subcommand) exits 2 with one line on stderr naming what is wrong;
- docs/cli.md documents every subcommand and option, with the defaults the CLI shows;
- one name, one meaning: generate-tosses' model gap is --model-gap (solve-batch's --gap is
  on|off), eval's and report's toss selection is --subset (train's --tosses is a count);
- --json on solve-batch, bench-solvers, eval and check: one JSON object on stdout, with the
  figures the text gives (a tiny batch, a one-epoch run);
- report's last line says how many files it wrote, and that is how many its folder holds.

    python3 tests/check_cli.py build/impulse
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(exe, *args):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def subcommands(exe, *path):
    rc, out, _ = run(exe, *path, "--help")
    assert rc == 0, f"{' '.join(path) or 'impulse'} --help exited {rc}"
    if "Subcommands:" not in out:
        return []
    block = out.split("Subcommands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\s{2}(\S+)\s", block, re.M)]


def help_options(out):
    """{option: default} of a --help text ('required' for a required one, '' for none)"""
    block = out.split("Options:", 1)[1].split("\n\n")[0]
    opts = {}
    for ln in block.splitlines():
        # "  --name TYPE[=DEFAULT] [REQUIRED]  description": the type may hold spaces
        # ("INT:INT in [2 - 5]=4"), and a long one leaves a single space before the description
        m = re.match(r"^\s{2}(-\S+)(.*)$", ln)
        if not m or ln.startswith("   "):
            continue
        name, typ = m.group(1), re.split(r"\s{2,}", m.group(2).strip(), maxsplit=1)[0]
        if name.startswith("-h,"):
            continue
        if "REQUIRED" in typ.split():
            opts[name] = "required"
        elif "=" in typ:
            opts[name] = typ.split("=", 1)[1].split()[0]
        else:
            opts[name] = ""
    return opts


def doc_sections(path):
    """{subcommand path: {option: default}} of docs/cli.md"""
    text = open(path, encoding="utf-8").read()
    sections = {}
    for part in re.split(r"^## `impulse ", text, flags=re.M)[1:]:
        name = part.split("`", 1)[0]
        opts = {}
        for m in re.finditer(r"^\| `(-[^`]+)`[^|]*\| ([^|]*)\|", part, re.M):
            d = m.group(2).strip()
            opts[m.group(1)] = d.strip("`") if d != "required" else "required"
        sections[tuple(name.split())] = opts
    return sections


def main():
    exe = sys.argv[1]
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    # every subcommand (and the impact command's own): help with exit codes and defaults
    paths = []
    for sub in subcommands(exe):
        paths.append((sub,))
        paths += [(sub, s) for s in subcommands(exe, sub)]
    check(len(paths) >= 15, f"found only {len(paths)} subcommands in --help")
    for path in paths:
        rc, out, _ = run(exe, *path, "--help")
        name = " ".join(path)
        check(rc == 0, f"{name} --help exited {rc}")
        check("Exit codes: 0 done" in out and "2 a usage error" in out, f"{name} --help lists no exit codes")
    rc, out, _ = run(exe, "train", "--help")
    for opt, default in (("--epochs", "100"), ("--patience", "12"), ("--batch", "64"), ("--eps", "0.0001"),
                         ("--friction", "cone"), ("--backend", "cpu")):
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(opt + " ")), "")
        check(re.search(rf"[=\[]{re.escape(default)}\]?\s", line + " ") is not None,
              f"train --help: {opt} does not show its default {default}: {line.strip()!r}")
    rc, out, _ = run(exe, "solve-batch", "--help")
    check("3 a problem of the batch is invalid_input" in out, "solve-batch --help does not list exit code 3")
    rc, out, _ = run(exe, "check", "--help")
    check("1 the run is not finished" in out, "check --help does not list exit code 1")
    rc, out, _ = run(exe, "sweep", "--help")
    check("130 interrupted" in out and "4 a run of the grid failed" in out, "sweep --help lacks codes 4 and 130")

    # usage errors: exit 2, one line naming the option
    with tempfile.TemporaryDirectory() as d:
        for args, named in ((("train", "--out", d + "/r", "--bogus", "1"), "--bogus"),
                            (("train", "--epochs", "many", "--out", d + "/r"), "--epochs"),
                            (("eval",), "--run"),
                            (("solve-batch", "--in", "x.npz", "--out", d + "/s.npz", "--lanes", "maybe"), "--lanes"),
                            (("solve-batch", "--in", "x.npz", "--out", d + "/s.npz", "--ipm-switch", "-1"), "--ipm-switch"),
                            (("solve-batch", "--in", "x.npz", "--out", d + "/s.npz", "--ipm-switch", "+5"), "--ipm-switch"),
                            (("solve-batch", "--in", "x.npz", "--out", d + "/s.npz", "--ipm-switch", "99999999999"),
                             "--ipm-switch"),
                            (("no-such-command",), "no-such-command"),
                            (("generate-tosses", "--gap", "vortex", "--out", d + "/t.npz"), "--gap"),
                            (("eval", "--run", d, "--tosses", "all"), "--tosses")):
            rc, out, err = run(exe, *args)
            lines = [ln for ln in err.splitlines() if ln.strip()]
            what = "impulse " + " ".join(args)
            check(rc == 2, f"{what}: exit code {rc}, expected 2")
            check(len(lines) == 1 and named in lines[0], f"{what}: stderr is not one line naming {named}: {err!r}")
        # the renamed options exist
        rc, out, _ = run(exe, "generate-tosses", "--help")
        check("--model-gap" in out, "generate-tosses has no --model-gap")
        for sub in ("eval", "report"):
            rc, out, _ = run(exe, sub, "--help")
            check("--subset" in out, f"{sub} has no --subset")
    # --json: one object on stdout
    with tempfile.TemporaryDirectory() as d:
        def one_object(what, out):
            lines = [ln for ln in out.splitlines() if ln.strip()]
            check(len(lines) == 1, f"{what} --json: {len(lines)} lines on stdout, expected one object")
            try:
                return json.loads(lines[0]) if lines else {}
            except ValueError:
                check(False, f"{what} --json: not JSON: {lines[0]!r}")
                return {}
        run(exe, "generate", "--kind", "random", "--n", "6", "--count", "10", "--out", d + "/b.npz")
        rc, out, _ = run(exe, "solve-batch", "--in", d + "/b.npz", "--out", d + "/s.npz", "--json")
        j = one_object("solve-batch", out)
        check(rc == 0 and j.get("problems") == 10 and j.get("status", {}).get("solved") == 10
              and j.get("exit_code") == 0 and j.get("out") == d + "/s.npz",
              f"solve-batch --json: exit {rc}, {j}")
        rc, out, _ = run(exe, "bench-solvers", "--count", "64", "--threads", "1", "--json")
        j = one_object("bench-solvers", out)
        rows = j.get("rows", [])
        check(rc == 0 and len(rows) >= 6 and all(r.get("problems_per_second", 0) > 0 for r in rows),
              f"bench-solvers --json: exit {rc}, {len(rows)} rows")
        rc, out, _ = run(exe, "check", "--run", d, "--json")
        j = one_object("check (not a run)", out)
        check(rc == 1 and j.get("finished") is False and j.get("exit_code") == 1,
              f"check --json of a folder with no run: exit {rc}, {j}")
        rc, _, err = run(exe, "train", "--out", d + "/r", "--epochs", "1", "--tosses", "4", "--threads", "1")
        check(rc == 0, f"train (one epoch) exited {rc}: {err[-300:]}")
        rc, out, _ = run(exe, "check", "--run", d + "/r", "--json")
        j = one_object("check", out)
        check(rc == 0 and j.get("consistent") is True and j.get("finished") is True and j.get("epochs_done") == 1,
              f"check --json of a finished run: exit {rc}, {j}")
        rc, out, _ = run(exe, "eval", "--run", d + "/r", "--out", d + "/m.json", "--threads", "1", "--json")
        j = one_object("eval", out)
        with open(d + "/m.json") as f:
            written = json.load(f)
        check(rc == 0 and j.get("out") == d + "/m.json" and j.get("position_error_m") == written.get("position_error_m"),
              f"eval --json: exit {rc}, keys {sorted(j)[:8]}")
        # report: its last line counts the files it wrote, which are the folder's (figures or not)
        rc, out, err = run(exe, "report", "--run", d + "/r", "--out", d + "/rep", "--threads", "1")
        lines = [ln for ln in out.splitlines() if ln.strip()]
        m = re.match(r"^wrote (\d+) files to (\S+)", lines[-1]) if lines else None
        files = sorted(os.listdir(d + "/rep")) if os.path.isdir(d + "/rep") else []
        check(rc == 0 and m is not None and m.group(2) == d + "/rep" and int(m.group(1)) == len(files),
              f"report: exit {rc}, last line {lines[-1:]!r}, the folder holds {len(files)} files: {files}, {err[-300:]}")

    # docs/cli.md: every subcommand and option, with the defaults the CLI shows
    docs = doc_sections(os.path.join(ROOT, "docs", "cli.md"))
    for path in paths:
        check(path in docs, f"docs/cli.md has no section for impulse {' '.join(path)}")
    for path, opts in docs.items():
        name = "impulse " + " ".join(path)
        if path not in paths:
            check(False, f"docs/cli.md documents {name}, which the CLI does not have")
            continue
        rc, out, _ = run(exe, *path, "--help")
        real = help_options(out)
        for opt, default in opts.items():
            if opt not in real:
                check(False, f"docs/cli.md: {name} {opt} does not exist")
                continue
            same = real[opt] == default or (default.startswith("data/") and real[opt].endswith("/" + default))
            check(same, f"docs/cli.md: {name} {opt}: default {default!r}, the CLI's {real[opt]!r}")
        for opt in real:
            check(opt in opts, f"docs/cli.md: {name} {opt} is not documented")
    if failures:
        print("\n".join("FAILED: " + f for f in failures))
        return 1
    print(f"cli conventions: {len(paths)} subcommands checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
