"""The README's quick start runs as written: its Python blocks, and its command lines on
the built-in data (the training cut to a few tosses and epochs; the sweep lines, which
read the public data sets, only parsed by the CLI's --help of their subcommand)."""
import os
import re
import shlex
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quick_start():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return text.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def test_the_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", quick_start(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    scope = {}
    for code in blocks:
        if "my_tosses" in code:  # the user's own data: the same calls on the built-in set
            code = code.replace('"my_tosses/"', repr(os.path.join(ROOT, "data", "synthetic_cube.npz")))
            code = code.replace("epochs=50", "epochs=1, tosses=4, progress=False")
        if "torch" in code:
            pytest.importorskip("torch", reason="PyTorch is not installed")
        exec(compile(code, "README.md", "exec"), scope)
    assert scope["res"].solved.all()
    assert scope["metrics"]["n_tosses"] > 0


def test_the_command_lines_run(tmp_path):
    from test_solve import cli
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built (build/impulse; or set IMPULSE_CLI)")
    lines = [ln.strip() for ln in quick_start().splitlines() if ln.strip().startswith(("build/impulse", "mpirun"))]
    assert len(lines) >= 8
    ran = 0
    for line in lines:
        args = shlex.split(line.split("#", 1)[0])
        if args[0] == "mpirun":
            args = args[args.index("build/impulse"):]
        sub = args[1]
        if "..." in args or "bench/sweeps/contactnets_fig5.json" in args or "my_tosses/" in args \
                or "elbow_tosses/" in args or (sub == "report" and "--sweep" in args):
            # public or the user's data: the subcommand and every option it names must exist
            out = subprocess.run([exe, sub, "--help"], capture_output=True, text=True, check=True).stdout
            for a in args[2:]:
                if a.startswith("--"):
                    assert a in out, f"README: impulse {sub} has no {a}"
            continue
        if sub == "train":
            args += ["--tosses", "4", "--epochs", "1", "--threads", "1"]
        p = subprocess.run([exe, *args[1:]], cwd=tmp_path, capture_output=True, text=True)
        assert p.returncode == 0, f"README: {line}\n{p.stderr}"
        ran += 1
    assert ran >= 5
