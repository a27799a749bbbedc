"""impulse: batched small convex solvers and contact-dynamics learning.

    import numpy as np, impulse
    res = impulse.solve_qp_batch(P, q, A, b, cones=(0, 6, 1))
    res.x, res.y, res.status, res.status_names

The QP form, per problem k (rows of A in cone order: zero, nonnegative, then three
rows per second-order cone {(t, u): ||u|| <= t}):

    minimize 1/2 x'P x + q'x   subject to  A x + s = b,  s in K

At a solution P x + q + A'y = 0, s = b - A x in K, y in K*, s'y = 0.
"""
from __future__ import annotations

import numpy as _np

from . import _impulse

__version__ = _impulse.version()
__all__ = ["solve_qp_batch", "FactorStore", "solve_qp_batch_osqp", "QpResult", "cuda_available", "STATUS_NAMES", "__version__",
           "Tosses", "load_tosses", "load_system", "train", "evaluate", "TRAIN_OPTIONS"]

#: the status codes' names, as in the CLI's batch files (0 not_run ... 7 invalid_input)
STATUS_NAMES = tuple(_impulse.status_names())


def cuda_available() -> bool:
    """True when impulse was built with CUDA and a device is present."""
    return bool(_impulse.cuda_available())


class QpResult:
    """The solutions of a batch: arrays with the batch as their first dimension.

    x (B, n), y (B, m), objective (B,), value (B,), prim_res, dual_res, rho (B,),
    status (B,) int (codes of STATUS_NAMES; ``status_names`` gives them as strings),
    fault (B,) int, iterations (B,) int, ipm_iterations (B,) int (of iterations, those of
    the interior-point finish after an ADMM stall: 0 for most problems), fault_text (list
    of B strings: why each problem that is not solved is not; empty for solved ones).
    """

    def __init__(self, d):
        self.__dict__.update(d)

    @property
    def status_names(self):
        return [STATUS_NAMES[s] for s in self.status]

    @property
    def solved(self):
        """a boolean array: the problems solved to the tolerance"""
        return self.status == STATUS_NAMES.index("solved")

    def __repr__(self):
        counts = {}
        for s in self.status_names:
            counts[s] = counts.get(s, 0) + 1
        return f"QpResult({len(self.status)} problems: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + ")"


class FactorStore(_impulse.FactorStore):
    """The factorizations of a batch's CPU solves, kept for re-solves in which only q
    and b change (OSQP's update of q and bounds):

        store = impulse.FactorStore()
        res = impulse.solve_qp_batch(P, q, A, b, cones, factors=store)
        res2 = impulse.solve_qp_batch(P, q2, A, b2, cones, factors=store, reuse_factors=True)

    Every solve given the store leaves each problem's factorization there (with its
    equilibration and step size); one with reuse_factors=True starts each problem from
    the one it finds and skips P's and A's checks, the equilibration and the
    factorization. P and A must be those of the store's last solve: call clear() when
    they change. A solve of another batch size, shape, precision or ``lanes`` sets up
    in full. ``bytes``: the memory held.
    """


def _array(name, a, dtype, ndim, shape):
    """a C-contiguous array of dtype: the caller's own when it already is one, else converted once"""
    if not isinstance(a, _np.ndarray):
        a = _np.asarray(a)
    if a.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions {shape}, got {a.ndim} (shape {a.shape})")
    if a.dtype != dtype:
        if not (_np.issubdtype(a.dtype, _np.floating) or _np.issubdtype(a.dtype, _np.integer)):
            raise ValueError(f"{name}: expected numbers (float64 or float32), got dtype {a.dtype}")
        a = a.astype(dtype)
    return _np.ascontiguousarray(a)


def solve_qp_batch(P, q, A, b, cones, *, eps=1e-5, max_iter=4000, precision="double", backend="cpu",
                   threads=0, lanes=True, warm=None, factors=None, reuse_factors=False,
                   ipm_switch="auto") -> QpResult:
    """Solve B conic QPs of one shape.

    P (B, n, n) symmetric positive semidefinite, q (B, n), A (B, m, n), b (B, m);
    cones = (n_zero, n_nonneg, n_soc) with m = n_zero + n_nonneg + 3 n_soc. A sparse A
    may come as (values (B, nnz), row_ptr (m + 1), col (nnz)), a CSR pattern shared by
    the batch with each problem's values in its order (columns increasing along a row).

    C-contiguous arrays of the precision's type (float64 for "double", float32 for
    "float") are read in place, with no copy: P, q, b, a CSR A's values, and a dense A
    whose every entry is nonzero in some problem of the batch. A dense A with entries
    that are zero throughout the batch has the others gathered once into the pattern
    they make (the solver then skips the zeros). Other arrays are converted once.
    eps: the absolute and relative tolerance; max_iter: the iteration budget.
    precision: "double" or "float"; backend: "cpu" or "cuda"; threads: CPU threads
    (0 = all cores); lanes: CPU problems side by side in SIMD lanes (False: one at a
    time). warm: (x, y) or (x, y, rho) of a previous solve to start from (rho: each
    problem's final step size, QpResult.rho; without it every problem starts at the
    default). factors: a FactorStore that keeps each problem's factorization (CPU);
    reuse_factors: start from the ones it holds (P and A unchanged since its last
    solve: only q and b changed). ipm_switch: hand a problem to the interior point once
    ADMM's residuals extrapolate to more than this many further iterations (CPU, double,
    no second-order cones; 0 = off; "auto", the default: one interior-point solve's
    cost in ADMM iterations, from the batch's shape, which hands dense QPs ADMM needs
    hundreds of iterations on to the interior point and leaves the contact QPs to ADMM).

    Each problem keeps its own status (one bad problem never spoils the others);
    wrong shapes, dtypes or options raise ValueError naming the array or option.
    """
    if precision not in ("double", "float"):
        raise ValueError(f"precision: expected 'double' or 'float', got {precision!r}")
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"backend: expected 'cpu' or 'cuda', got {backend!r}")
    try:
        nz, nn, ns = (int(c) for c in cones)
    except (TypeError, ValueError):
        raise ValueError(f"cones: expected (n_zero, n_nonneg, n_soc), got {cones!r}") from None
    if min(nz, nn, ns) < 0:
        raise ValueError(f"cones: counts must be >= 0, got {cones!r}")
    if not (eps > 0):
        raise ValueError(f"eps: expected a positive tolerance, got {eps!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter: expected at least 1, got {max_iter!r}")
    if isinstance(ipm_switch, str) and ipm_switch == "auto":
        ipm_switch = _impulse.IPM_SWITCH_AUTO  # QpSettings' kQpIpmSwitchAuto
    elif isinstance(ipm_switch, str) or isinstance(ipm_switch, bool) or int(ipm_switch) < 0:
        raise ValueError(f"ipm_switch: expected 'auto', 0 (off) or more iterations, got {ipm_switch!r}")
    if int(threads) < 0:
        raise ValueError(f"threads: expected 0 (all cores) or more, got {threads!r}")
    dtype = _np.float64 if precision == "double" else _np.float32
    P = _array("P", P, dtype, 3, "(B, n, n)")
    B, n = P.shape[0], P.shape[1]
    if B == 0:
        raise ValueError("P: the batch is empty (B = 0)")
    if P.shape[2] != n:
        raise ValueError(f"P: expected (B, n, n), got shape {P.shape}")
    m = nz + nn + 3 * ns
    q = _array("q", q, dtype, 2, "(B, n)")
    b = _array("b", b, dtype, 2, "(B, m)")
    if isinstance(A, tuple):  # (values (B, nnz), row_ptr (m + 1), col (nnz)): read in place
        try:
            values, row_ptr, col = A
        except ValueError:
            raise ValueError("A: expected a (B, m, n) array or (values (B, nnz), row_ptr (m + 1), col (nnz))") from None
        values = _array("A values", values, dtype, 2, "(B, nnz)")
        row_ptr = _array("A row_ptr", row_ptr, _np.int32, 1, "(m + 1,)")
        col = _array("A col", col, _np.int32, 1, "(nnz,)")
        if row_ptr.shape != (m + 1,):
            raise ValueError(f"A row_ptr: expected {m + 1} entries (m + 1, m = {m} from cones), got {row_ptr.shape[0]}")
        if values.shape != (B, col.shape[0]):
            raise ValueError(f"A values: expected shape {(B, col.shape[0])} (B, nnz = len(col)), got {values.shape}")
    else:
        A = _array("A", A, dtype, 3, "(B, m, n)")
        if A.shape != (B, m, n):
            raise ValueError(f"A: expected shape {(B, m, n)} (B, m, n) with B = {B}, n = {n} (from P) and "
                             f"m = {m} (from cones), got {A.shape}")
        values, row_ptr, col = _pattern_of(A)
    for name, arr, want in (("q", q, (B, n)), ("b", b, (B, m))):
        if arr.shape != want:
            dims = {"q": "(B, n)", "b": "(B, m)"}[name]
            raise ValueError(f"{name}: expected shape {want} {dims} with B = {B}, n = {n} (from P) and "
                             f"m = {m} (from cones), got {arr.shape}")
    wx = wy = wr = None
    if warm is not None:
        try:
            wx, wy, *rest = warm
            if len(rest) > 1:
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError("warm: expected (x, y) or (x, y, rho) of a previous solve") from None
        if rest:
            wr = _array("warm rho", rest[0], dtype, 1, "(B,)")
            if wr.shape != (B,):
                raise ValueError(f"warm rho: expected shape {(B,)}, got {wr.shape}")
            if not (_np.isfinite(wr).all() and (wr >= 0).all()):
                raise ValueError("warm rho: expected finite step sizes >= 0 (0: start at the default)")
        wx = _array("warm x", wx, dtype, 2, "(B, n)")
        wy = _array("warm y", wy, dtype, 2, "(B, m)")
        if wx.shape != (B, n) or wy.shape != (B, m):
            raise ValueError(f"warm: expected x {(B, n)} and y {(B, m)}, got {wx.shape} and {wy.shape}")
    if factors is not None and not isinstance(factors, _impulse.FactorStore):
        raise ValueError(f"factors: expected an impulse.FactorStore, got {type(factors).__name__}")
    if reuse_factors and factors is None:
        raise ValueError("reuse_factors: needs factors=FactorStore (the store whose factorizations to reuse)")
    if factors is not None and backend != "cpu":
        raise ValueError("factors: the CPU backend's (the device keeps its own)")
    solve = _impulse.solve_double if precision == "double" else _impulse.solve_float
    d = solve(P, q, values, row_ptr, col, b, (nz, nn, ns), float(eps), int(max_iter), backend, int(threads),
              bool(lanes), wx, wy, wr, factors, bool(reuse_factors), int(ipm_switch))
    return QpResult(d)


def _pattern_of(A):
    """A's values and CSR pattern: the entries nonzero in some problem of the batch.
    Where every entry is (a dense A), the array itself is the values, read in place;
    otherwise the values in the pattern are gathered once."""
    B, m, n = A.shape
    used = (A != 0).any(axis=0) if B else _np.zeros((m, n), bool)
    if used.all():
        row_ptr = _np.arange(0, m * n + 1, n, dtype=_np.int32)
        col = _np.tile(_np.arange(n, dtype=_np.int32), m)
        return A.reshape(B, m * n), row_ptr, col
    row_ptr = _np.concatenate([[0], _np.cumsum(used.sum(axis=1))]).astype(_np.int32)
    col = _np.nonzero(used)[1].astype(_np.int32)
    return _np.take(A.reshape(B, m * n), _np.flatnonzero(used), axis=1), row_ptr, col


def solve_qp_batch_osqp(P, q, A, l, u, **options) -> QpResult:
    """Solve B QPs in OSQP's form: minimize 1/2 x'P x + q'x subject to l <= A x <= u.

    P (B, n, n), q (B, n), A (B, m, n), l and u (B, m) with -inf / +inf for a missing
    bound. Each row becomes the conic form's rows (solve_qp_batch): l = u an
    equality, one finite bound a nonnegative row, two finite bounds two rows, none
    dropped; which of these a row is must be the same in every problem of the batch
    (a ValueError names the row and the problem otherwise). The options are
    solve_qp_batch's. The result's y (B, m) is OSQP's: the multiplier of the upper
    bound minus that of the lower one (so positive where A x = u binds, negative where
    A x = l does); the other arrays are as solve_qp_batch gives them.
    """
    precision = options.get("precision", "double")
    dtype = _np.float64 if precision == "double" else _np.float32
    A = _array("A", A, dtype, 3, "(B, m, n)")
    B, m, n = A.shape
    l = _np.asarray(l, dtype=_np.float64)
    u = _np.asarray(u, dtype=_np.float64)
    for name, v in (("l", l), ("u", u)):
        if v.shape != (B, m):
            raise ValueError(f"{name}: expected shape {(B, m)} (B, m) as A's rows, got {v.shape}")
    # the conic rows, as solve-batch --form osqp makes them (host/batch/qp_forms.h): a
    # NaN, l > u or a row whose kind differs between problems is refused by name
    c = _impulse.osqp_rows(_np.ascontiguousarray(A, dtype=_np.float64), _np.ascontiguousarray(l),
                           _np.ascontiguousarray(u))
    eq, upper, lower = c["equality"], c["upper"], c["lower"]
    res = solve_qp_batch(P, q, c["A"].astype(dtype, copy=False), c["b"].astype(dtype, copy=False), c["cones"],
                         **options)
    yc = res.y
    y = _np.zeros((B, m), dtype=yc.dtype)
    y[:, eq] = yc[:, :len(eq)]
    y[:, upper] += yc[:, len(eq):len(eq) + len(upper)]
    y[:, lower] -= yc[:, len(eq) + len(upper):]
    res.y = y
    return res


from .learning import TRAIN_OPTIONS, Tosses, evaluate, load_system, load_tosses, train  # noqa: E402
