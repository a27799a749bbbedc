"""Toss data, training runs and their evaluation: the CLI's `train` and `eval` from Python.

    import impulse
    tosses = impulse.load_tosses("data/tosses.npz")           # every format the CLI reads
    run = impulse.train(data="data/tosses.npz", out="runs/a", max_epochs=20)
    metrics = impulse.evaluate("runs/a")                      # the test split's rollouts
    metrics["position_error_m"]

The runs are the CLI's own run directories (config.json, checkpoint.json,
params.json, history.csv, log.txt; a lock refuses a second writer; a run whose
checkpoint exists resumes), so `impulse eval`, `impulse report` and a sweep read them
too, and `impulse train` continues one started here.
"""
from __future__ import annotations

import json as _json
import os as _os

import numpy as _np

from . import _impulse

__all__ = ["Tosses", "load_tosses", "load_system", "train", "evaluate", "TRAIN_OPTIONS"]

#: train()'s options and their defaults: `impulse train`'s, named as its options are
#: (--max-seconds is max_seconds); progress (a live line on a terminal) is Python's only
TRAIN_OPTIONS = {
    "method": "contactnets-polytope",  # | contactnets-deep | end-to-end; with system: ccn | ccn-r | diffsim | end-to-end
    "system": "",              # "" = the cube tosses (ContactNets); cube | asymmetric | elbow (the CCN family)
    "tosses": 0,               # training tosses (0 = the whole training split)
    "dt": 0.0,                 # the data's time step in s (0 = the data's own)
    "seed": 0,
    "epochs": 100,             # most epochs
    "patience": 12,
    "batch": 64,               # transitions per Adam step
    "lr": 0.0,                 # 0 = the method's default
    "weight_decay": -1.0,      # < 0 = the method's default
    "init_noise": 0.4,
    "friction": "cone",        # | octagon
    "eps": 1e-4,
    "threads": 0,              # 0 = all cores
    "backend": "cpu",          # | cuda
    "layout": "auto",          # cuda: auto | thread | warp
    "max_seconds": 0.0,        # 0 = no time budget
    "progress": True,          # a live progress line on a terminal
    "w_res": -1.0,
    "w_res_w": -1.0,
    "residual_layers": 2,      # ccn-r, diffsim-r: the residual network's hidden layers
    "residual_width": 128,     # and their width
    "known": "",               # CCN, DiffSim: groups given, not learned: geometry,friction,inertia
    "smooth_velocities": -1,   # -1 = the data's documented choice
    "select": "loss",          # | rollout
}
# the names TrainConfig (host/learning/trainer.h) gives the options whose CLI names differ
_CONFIG_NAMES = {"epochs": "max_epochs", "batch": "batch_size"}


class Tosses:
    """Trajectories read from a data set.

    format: "contactnets" | "ccn" | "impulse" | "impulse-multibody"; states: a list of
    (T_j, width) float64 arrays, one per toss, in SI (cube rows: position (3), quaternion
    w, x, y, z (body to world), velocity (3, world), angular velocity (3, body); a
    multibody system's rows add its joint angles and rates); names: the tosses' names
    (file stems); dt: the time step (s); meta: the cube data's body (mass, inertia,
    gravity, half_width, mu, restitution), or None for multibody data; system: the
    system name the tosses were read for, or None.
    """

    def __init__(self, d):
        self.format = d["format"]
        self.width = int(d["width"])
        self.dt = float(d["dt"])
        self.names = list(d["names"])
        self.states = list(d["states"])
        self.meta = dict(d["meta"]) if "meta" in d else None
        self.system = d.get("system")

    def __len__(self):
        return len(self.states)

    def __getitem__(self, k):
        return self.states[k]

    @property
    def rows(self):
        return sum(s.shape[0] for s in self.states)

    def __repr__(self):
        return f"Tosses({len(self)} tosses, {self.rows} rows of {self.width}, format {self.format}, dt {self.dt:g} s)"


def load_system(system) -> dict:
    """A multibody system by name (cube | asymmetric | elbow) or from a file (impulse's
    JSON description or a URDF, docs/systems.md), as the CLI's --system reads it: a dict
    of name, gravity, friction, width (the state's) and links, each with name, parent (-1
    for the base), joint_origin, axis, mass, com, inertia (3 x 3 about the COM) and
    vertices (k x 3) as NumPy arrays, and state: the layout its data files use (rotation
    quaternion_wxyz | quaternion_xyzw | matrix, angular_velocity body | world, joints: the
    data's joint columns by link name), which load_tosses converts from. A bad file raises
    ValueError naming the file and the link. The same names and files go to load_tosses,
    train and impulse.torch.CcnLoss."""
    if not isinstance(system, (str, _os.PathLike)):
        raise ValueError(f"system: expected a system name or a file, got {system!r}")
    d = dict(_impulse.load_system(_os.fspath(system)))
    links = []
    for k in d["links"]:
        k = dict(k)
        for key in ("joint_origin", "axis", "com", "inertia"):
            k[key] = _np.array(k[key], dtype=_np.float64)
        k["vertices"] = _np.array(k["vertices"], dtype=_np.float64).reshape(-1, 3)
        links.append(k)
    d["links"] = links
    return d


def load_tosses(path, system=None, *, dt=0.0) -> Tosses:
    """Reads toss data in every format the CLI reads (ContactNets' .pt folders, CCN's zip
    .pt folders, impulse's .npz; float64 or float32 tensors) and returns a Tosses. With
    system (cube | asymmetric | elbow, or a system file), the tosses are read as that
    multibody system's (its row width, checked; a file's "state" layout converted to the
    model's). dt > 0 is the time step in seconds where it differs from
    what the data say (experiment.json, the .npz's meta, 0.0068 for CCN folders), as the
    CLI's --dt. A missing, corrupt or inconsistent file raises ValueError naming the
    file, and the row and column of a value where that is the fault."""
    path = _os.fspath(path)
    dt = _dt(dt)
    if system is None:
        return Tosses(_impulse.load_cube_tosses(path, dt))
    if not isinstance(system, (str, _os.PathLike)):
        raise ValueError(f"system: expected a system name or a file, got {system!r}")
    return Tosses(_impulse.load_system_tosses(path, _os.fspath(system), dt))


def _dt(dt):
    try:
        v = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f"dt: expected a time step in seconds, got {dt!r}") from None
    if not (v >= 0 and v <= 1):
        raise ValueError(f"dt: expected a time step in seconds, > 0 and at most 1 (0: the data's own), got {dt!r}")
    return v


def train(*, data, out, verbose=True, **options) -> dict:
    """Trains a model (or resumes the run in `out`), as `impulse train` does.

    data: the tosses (any format load_tosses reads); out: the run directory. options:
    TRAIN_OPTIONS' names with their types (an unknown name or a wrong type raises
    ValueError naming it; values are checked as the CLI checks them). verbose: the log
    lines on stdout (they are always in out/log.txt). Returns a dict: history (a list
    of epoch records: epoch, train_loss, valid_loss, seconds, mean_qp_iterations, ...),
    best_epoch, best_valid, early_stopped, resumed, out. The learned model is
    out/params.json. The interpreter's lock is released while it trains.
    """
    opts = {"data": _os.fspath(data), "out": _os.fspath(out)}
    for k, v in options.items():
        if k not in TRAIN_OPTIONS:
            raise ValueError(f"unknown option '{k}' (train takes: {', '.join(sorted(TRAIN_OPTIONS))})")
        want = type(TRAIN_OPTIONS[k])
        if want is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, want) or (want is int and isinstance(v, bool)):
            raise ValueError(f"{k}: expected {want.__name__}, got {v!r}")
        opts[_CONFIG_NAMES.get(k, k)] = v
    return _json.loads(_impulse.train(_json.dumps(opts), bool(verbose)))


def evaluate(run, data=None, *, subset=None, params="params.json", threads=0, dt=0.0) -> dict:
    """Rolls out tosses with a trained run and returns the paper's metrics, as `impulse
    eval` writes them (position_error_m, rotation_error_deg, penetration_m, n_tosses,
    per-toss figures, ...).

    data: the tosses (default: the run's own); subset: "test" (the run's test split,
    the default for its own data), "all" (the default for other data) or a list of
    indices; params: which parameter file of the run (init_params.json: the start); dt: the
    data's time step (0 = the run's dt if it was given one, else the data's own)."""
    if subset is None:
        spec = ""
    elif isinstance(subset, str):
        spec = subset
    else:
        try:
            spec = ",".join(str(int(t)) for t in subset)
        except (TypeError, ValueError):
            raise ValueError(f"subset: expected 'test', 'all' or a list of indices, got {subset!r}") from None
    if int(threads) < 0:
        raise ValueError(f"threads: expected 0 (all cores) or more, got {threads!r}")
    return _json.loads(_impulse.evaluate(_os.fspath(run), "" if data is None else _os.fspath(data), spec,
                                         str(params), int(threads), _dt(dt)))
