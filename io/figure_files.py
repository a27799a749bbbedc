"""Writing the figure files of impulse's figure scripts (io/figure_script.h).

    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io"))
    import figure_files

    figure_files.save(fig, "out/fig.png", dpi=130)  # whole or not at all
    figure_files.run(main)                           # a failure to write: one line, status 1

save() draws into a temporary beside the figure (".NAME.PID.part") and os.replace()s
it: a full disk or an unwritable folder leaves the old file or none, never a
truncated one, and the temporary is removed. Temporaries of a script that was killed
(their PID no longer runs) are removed when the same figure is written again. Each
figure written is reported, one absolute path a line, to the file descriptor named
by IMPULSE_FIGURES_FD when the script runs under impulse (run_figure_script counts
them).

The PNG and SVG files also carry what they show, as JSON in their Description
metadata (describe(): the figure's title and, per axes, its title, axis labels,
legend entries, texts and labelled lines), so that a test or a reader can check a
figure without looking at it.
"""
import json
import math
import os
import sys


class WriteError(Exception):
    """A figure could not be written: the message names the file and the reason."""


def _pid_runs(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: running
    return True


def _remove_stale(folder, name):
    prefix = f".{name}."
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for e in entries:
        if not (e.startswith(prefix) and e.endswith(".part")):
            continue
        pid = e[len(prefix):-len(".part")]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_runs(int(pid)):
            try:
                os.unlink(os.path.join(folder, e))
            except OSError:
                pass


def _report(path):
    fd = os.environ.get("IMPULSE_FIGURES_FD")
    if not fd:
        return
    try:
        os.write(int(fd), (path + "\n").encode())
    except (OSError, ValueError):
        pass  # not run by impulse (a stale variable): nobody to tell


def finite(values):
    """the values that are finite numbers, as floats (others skipped)"""
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def describe(fig):
    """What fig shows, as a JSON text: {"title", "legend", "axes": [{"title", "xlabel",
    "ylabel", "legend", "texts", "lines": [{"label", "points", "x": [min, max]}]}]}
    (lines: those with a label, i.e. not matplotlib's "_..." ones)."""
    def legend_texts(leg):
        return [t.get_text() for t in leg.get_texts()] if leg is not None else []

    axes = []
    for ax in fig.axes:
        lines = []
        for ln in ax.get_lines():
            label = ln.get_label()
            if not label or label.startswith("_"):
                continue
            xs = finite(ln.get_xdata())
            lines.append({"label": label, "points": len(ln.get_xdata()),
                          "x": [min(xs), max(xs)] if xs else []})
        axes.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                     "legend": legend_texts(ax.get_legend()), "texts": [t.get_text() for t in ax.texts],
                     "lines": lines})
    sup = getattr(fig, "_suptitle", None)
    return json.dumps({"title": sup.get_text() if sup is not None else "",
                       "legend": [t for leg in fig.legends for t in legend_texts(leg)], "axes": axes},
                      ensure_ascii=True)


def save(fig, path, **savefig_kwargs):
    """fig.savefig(path) atomically; the format is path's extension. PNG and SVG files
    carry describe(fig) as their Description."""
    path = os.path.abspath(path)
    folder, name = os.path.split(path)
    fmt = os.path.splitext(name)[1].lstrip(".").lower()
    if fmt in ("png", "svg"):
        meta = dict(savefig_kwargs.pop("metadata", None) or {})
        meta.setdefault("Description", describe(fig))
        savefig_kwargs["metadata"] = meta
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.part")
    _remove_stale(folder, name)
    try:
        with open(tmp, "wb") as f:
            fig.savefig(f, format=fmt, **savefig_kwargs)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise WriteError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _report(path)


def run(main, *args):
    """main(*args); a figure that cannot be written, or an input that cannot be read,
    ends the script with one line on standard error and status 1 (no traceback)."""
    script = os.path.basename(sys.argv[0])
    try:
        main(*args)
    except WriteError as e:
        sys.exit(f"{script}: {e}")
    except OSError as e:
        what = f"{e.filename}: " if e.filename else ""
        sys.exit(f"{script}: {what}{e.strerror or e}")
