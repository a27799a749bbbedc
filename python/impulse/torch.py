"""impulse.torch: a differentiable batch of conic QPs for PyTorch.

    import torch, impulse.torch as it
    layer = it.ConicQP(cones=(0, 6, 1))            # rows: zero, nonnegative, 3 per SOC
    x, y, value = layer(P, q, A, b)               # P (B, n, n), q (B, n), A (B, m, n), b (B, m)
    loss = value.sum() + (x ** 2).sum()
    loss.backward()                               # gradients for P, q, A and b

Per problem: minimize 1/2 x'Px + q'x subject to Ax + s = b, s in K (the forward
pass is impulse's batch solver, impulse.solve_qp_batch). Gradients:

- grad="implicit" (the default): of x, y and the value, by implicit
  differentiation of the solution's conditions. With u = s - y and Pi the
  projection onto K, a solution is a zero of
      F(x, u) = [P x + q + A'(Pi(u) - u);  A x + Pi(u) - b]
  (s = Pi(u), y = Pi(u) - u: Moreau's decomposition); the backward pass solves
  a linear system per problem with F's Jacobian, in which Pi's derivative is 0 on
  the zero cone's rows, 0 or 1 on the nonnegative ones and the second-order
  cone's projection derivative on each cone's three rows (as diffcp and
  cvxpylayers do). It runs in impulse (host/diff/qp_adjoint.h), on the CPU
  threads, in an exact reduced form: only the active rows and the cones on their
  boundary stay in it (n + active unknowns, not n + m). Where that system is
  singular (a degenerate solution), its minimum-norm least-squares solution is
  used; `last_backward` counts those.
- grad="envelope": the value's gradient alone, by the envelope theorem
  (d/dq = x, d/db = -y, d/dP = 1/2 x x', d/dA = y x'), the form impulse's
  learning losses use; x and y come back without gradients.

P is read as given and its gradient is symmetrized (1/2 (G + G')), which is the
gradient for a symmetric P. Tensors float64 or float32 (solved in that
precision), on the CPU (the lanes, the backward pass in impulse) or on CUDA device
0 when impulse was built with CUDA (the batch stays on the device: impulse reads
and writes the tensors' device memory through DLPack, on the legacy default stream
after synchronizing the current one; the backward pass is adjoint_torch, torch
operations on the device). A problem that is not solved to eps raises RuntimeError naming it
and saying why (check=False returns its NaN or budget-limited answer instead).
"""
from __future__ import annotations

import os as _os

import numpy as _np
import torch as _torch

from . import STATUS_NAMES, QpResult, _impulse, solve_qp_batch

__all__ = ["ConicQP", "ConicQPLayer", "ContactNetsLoss", "CcnLoss", "soc_projection_derivative",
           "cone_projection_derivative", "adjoint_torch"]

_SOLVED = STATUS_NAMES.index("solved")


def soc_projection_derivative(u):
    """The derivative of the projection onto {(t, z): ||z|| <= t} at u (..., 3): (..., 3, 3)."""
    t, z = u[..., 0], u[..., 1:]
    nz = _torch.linalg.vector_norm(z, dim=-1)
    eye = _torch.eye(3, dtype=u.dtype, device=u.device).expand(u.shape[:-1] + (3, 3))
    safe = _torch.where(nz > 0, nz, _torch.ones_like(nz))
    w = z / safe[..., None]                      # the unit direction of z
    r = (t / safe)[..., None, None]
    D = _torch.zeros(u.shape[:-1] + (3, 3), dtype=u.dtype, device=u.device)
    D[..., 0, 0] = 1
    D[..., 0, 1:] = w
    D[..., 1:, 0] = w
    D[..., 1:, 1:] = (1 + r) * _torch.eye(2, dtype=u.dtype, device=u.device) - r * w[..., :, None] * w[..., None, :]
    D = 0.5 * D
    inside = (nz <= t)[..., None, None]
    polar = (nz <= -t)[..., None, None]
    return _torch.where(inside, eye, _torch.where(polar, _torch.zeros_like(D), D))


def cone_projection_derivative(u, cones, tol=0.0):
    """The derivative of the projection onto K = {0}^nz x R+^nn x SOC^ns at u (B, m): (B, m, m).

    A nonnegative row is taken as inactive (derivative 1) where u > -tol: where the
    multiplier y = -u is not above tol. At a degenerate solution (s = y = 0 on a row)
    the projection has no derivative there; this picks the side on which the row stays
    inactive, which keeps the backward system regular where more rows touch their bound
    than there are variables (the contact QPs' unused contacts)."""
    nz, nn, ns = cones
    B, m = u.shape
    D = _torch.zeros(B, m, m, dtype=u.dtype, device=u.device)
    idx = _torch.arange(nz, nz + nn, device=u.device)
    D[:, idx, idx] = (u[:, nz:nz + nn] > -tol).to(u.dtype)
    for c in range(ns):
        r0 = nz + nn + 3 * c
        D[:, r0:r0 + 3, r0:r0 + 3] = soc_projection_derivative(u[:, r0:r0 + 3])
    return D


def _solve_transposed(J, rhs):
    """J' lam = rhs per problem (J (B, k, k), rhs (B, k)); least squares where J is singular"""
    Jt = J.transpose(1, 2)
    lam, info = _torch.linalg.solve_ex(Jt, rhs)
    bad = info != 0
    if bool(bad.any()):
        lam = lam.clone()
        lam[bad] = _torch.linalg.lstsq(Jt[bad], rhs[bad][..., None], driver="gelsd").solution[..., 0]
    return lam


def adjoint_torch(P, A, b, x, y, gx, gy, gv, cones, eps):
    """The backward pass in torch operations, on whatever device the tensors are (the
    path of CUDA tensors): the same conditions as impulse's (host/diff/qp_adjoint.h),
    as the full (n + m) system per problem. Returns the gradients of (P, q, A, b)."""
    B, n = x.shape
    m = y.shape[1]
    gq = _torch.zeros_like(x)
    gb = _torch.zeros_like(y)
    gP = _torch.zeros_like(P)
    gA = _torch.zeros_like(A)
    if gv is not None:  # the envelope theorem
        v = gv[:, None]
        gq = gq + v * x
        gb = gb - v * y
        gP = gP + 0.5 * gv[:, None, None] * x[:, :, None] * x[:, None, :]
        gA = gA + gv[:, None, None] * y[:, :, None] * x[:, None, :]
    if gx is not None or gy is not None:
        gx = _torch.zeros_like(x) if gx is None else gx
        gy = _torch.zeros_like(y) if gy is None else gy
        s = b - _torch.einsum("bmn,bn->bm", A, x)
        u = s - y
        # a multiplier within the solve's tolerance of zero marks a row inactive
        tol = 10 * eps * _torch.clamp(y.abs().amax(dim=1, keepdim=True), min=1.0)
        D = cone_projection_derivative(u, cones, tol)
        DmI = D - _torch.eye(m, dtype=x.dtype, device=x.device)
        J = _torch.zeros(B, n + m, n + m, dtype=x.dtype, device=x.device)
        J[:, :n, :n] = P
        J[:, :n, n:] = A.transpose(1, 2) @ DmI
        J[:, n:, :n] = A
        J[:, n:, n:] = D
        rhs = _torch.cat([gx, _torch.einsum("bij,bi->bj", DmI, gy)], dim=1)
        lam = _solve_transposed(J, rhs)
        lx, lu = lam[:, :n], lam[:, n:]
        gq = gq - lx
        gb = gb + lu
        gP = gP - lx[:, :, None] * x[:, None, :]
        gA = gA - y[:, :, None] * lx[:, None, :] - lu[:, :, None] * x[:, None, :]
    gP = 0.5 * (gP + gP.transpose(1, 2))
    return gP, gq, gA, gb


class _ConicQPFunction(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, P, q, A, b, layer):
        x, y, value = layer._solve(P, q, A, b)
        ctx.layer = layer
        ctx.save_for_backward(P, A, b, x, y)
        if layer.grad == "envelope":
            ctx.mark_non_differentiable(x, y)
        return x, y, value

    @staticmethod
    def backward(ctx, gx, gy, gv):
        P, A, b, x, y = ctx.saved_tensors
        layer = ctx.layer
        if layer.grad == "envelope":
            gx = gy = None
        if P.is_cuda:  # on the device, in torch operations
            gP, gq, gA, gb = adjoint_torch(P, A, b, x, y, gx, gy, gv, layer.cones, layer.eps)
            return gP, gq, gA, gb, None
        # impulse's adjoint (host/diff/qp_adjoint.h): the gradients are written into
        # these tensors' storage, problem by problem on the CPU threads; those of
        # inputs that need none are not computed (P's and A's are the large ones)
        need = ctx.needs_input_grad[:4]
        gP, gq, gA, gb = (_torch.empty_like(t, memory_format=_torch.contiguous_format) if want else None
                          for t, want in zip((P, x, A, y), need))
        cpu = [None if t is None else t.detach().contiguous().numpy() for t in (gx, gy, gv)]
        adjoint = _impulse.adjoint_double if P.dtype == _torch.float64 else _impulse.adjoint_float
        info = adjoint(*(t.detach().contiguous().numpy() for t in (P, A, b, x, y)), *cpu, layer.cones, layer.eps,
                       int(layer.threads), *(None if g is None else g.numpy() for g in (gP, gq, gA, gb)))
        layer.last_backward = info
        return gP, gq, gA, gb, None


class ConicQP:
    """A batch of conic QPs as a differentiable function of (P, q, A, b).

    cones = (n_zero, n_nonneg, n_soc): A's and b's rows in that order, three per
    second-order cone. eps: the solver's tolerance (absolute and relative); the
    gradients are as accurate as the solution. grad: "implicit" or "envelope"
    (module docstring). max_iter, threads, lanes: as impulse.solve_qp_batch.
    warm: start each call from the previous call's solution (x, y and each
    problem's final step size rho) when the batch's shape is the same. check: raise RuntimeError when a problem is not solved.

    Calling it returns (x (B, n), y (B, m), value (B,)); 2-D P, A and 1-D q, b are
    one problem (the outputs then have no batch dimension). `last` is the last
    call's impulse.QpResult (statuses, iterations, residuals).
    """

    def __init__(self, cones, eps=1e-8, grad="implicit", *, max_iter=20000, threads=0, lanes=True, warm=False,
                 check=True):
        try:
            self.cones = tuple(int(c) for c in cones)
        except (TypeError, ValueError):
            raise ValueError(f"cones: expected (n_zero, n_nonneg, n_soc), got {cones!r}") from None
        if len(self.cones) != 3 or min(self.cones) < 0:
            raise ValueError(f"cones: expected three counts >= 0 (n_zero, n_nonneg, n_soc), got {cones!r}")
        if grad not in ("implicit", "envelope"):
            raise ValueError(f"grad: expected 'implicit' or 'envelope', got {grad!r}")
        if not (eps > 0):
            raise ValueError(f"eps: expected a positive tolerance, got {eps!r}")
        self.eps, self.grad, self.max_iter, self.threads, self.lanes = float(eps), grad, int(max_iter), threads, lanes
        self.warm, self.check = bool(warm), bool(check)
        self.last = None
        self.last_backward = None  # the last backward pass's counts (least_squares, not_finite, largest_system)
        self.pattern = None  # A's kept CSR pattern (row_ptr, col, the (m, n) mask), or None: found per call
        # ConicQPLayer's kept factorizations (CPU): the store, and the P and A it holds them for
        self.factors = None
        self._factored = None
        self.reused = False  # whether the last call started from kept factorizations

    @property
    def m(self):
        nz, nn, ns = self.cones
        return nz + nn + 3 * ns

    def _kept_values(self, A, xp):
        """A's values in the kept pattern (CSR form), refusing an entry outside it; xp is
        numpy for CPU arrays, torch for device tensors"""
        row_ptr, col, used = self.pattern
        if tuple(A.shape[1:]) != used.shape:
            raise ValueError(f"A: shape {tuple(A.shape)} differs from the kept pattern's {(None,) + used.shape}")
        if xp is _np:
            # (the entries nonzero anywhere in the batch, then the pattern's values by index:
            # a boolean gather of the entries outside the pattern cost 6 ms at B = 1,000)
            flat = A.reshape(A.shape[0], -1)
            stray = (flat != 0).any(axis=0).reshape(used.shape) & ~used
            if stray.any():
                k = int(_np.flatnonzero((A[:, stray] != 0).any(axis=1))[0])
                i, j = (int(v) for v in _np.argwhere(stray & (A[k] != 0))[0])
                raise ValueError(f"A: entry ({i}, {j}) of problem {k} is nonzero outside the layer's kept pattern "
                                 "(make a new layer, or call reset_pattern())")
            values = flat if used.all() else _np.take(flat, _np.flatnonzero(used), axis=1)
            return values, row_ptr, col
        mask = _torch.from_numpy(used).to(A.device)
        outside = A[:, ~mask]
        if outside.numel() if xp is _torch else outside.size:
            nonzero = outside != 0
            if bool(nonzero.any()):
                k, e = (int(v) for v in _np.argwhere(_np.asarray(nonzero.cpu() if xp is _torch else nonzero))[0])
                i, j = (int(v) for v in _np.argwhere(~used)[e])
                raise ValueError(f"A: entry ({i}, {j}) of problem {k} is nonzero outside the layer's kept pattern "
                                 "(make a new layer, or call reset_pattern())")
        values = A.reshape(A.shape[0], -1) if used.all() else A[:, mask]
        return (values if xp is _np else values.contiguous()), row_ptr, col

    def _solve(self, P, q, A, b):
        """the forward solve: (x, y, value) as tensors on P's device; self.last is its QpResult"""
        for name, t in (("q", q), ("A", A), ("b", b)):
            if t.device != P.device:
                raise ValueError(f"{name}: on {t.device}, P on {P.device}: the batch must be on one device")
            if t.dtype != P.dtype:
                raise ValueError(f"{name}: dtype {t.dtype} differs from P's {P.dtype}")
        if P.dtype not in (_torch.float64, _torch.float32):
            raise ValueError(f"P: expected float64 or float32, got {P.dtype}")
        if P.device.type == "cuda":
            return self._solve_cuda(P, q, A, b)
        if P.device.type != "cpu":
            raise ValueError(f"P: impulse.torch solves CPU and CUDA tensors; got one on {P.device}")
        precision = "double" if P.dtype == _torch.float64 else "float"
        arr = [t.detach().contiguous().numpy() for t in (P, q, A, b)]
        if self.pattern is not None:
            arr[2] = self._kept_values(arr[2], _np)
        warm = None
        if self.warm and self.last is not None and not self.last.on_cuda \
                and self.last.x.shape == (arr[0].shape[0], arr[0].shape[1]) \
                and self.last.y.shape == (arr[0].shape[0], self.m) and self.last.x.dtype == arr[0].dtype:
            warm = (self.last.x, self.last.y, self.last.rho)
        reuse = False
        if self.factors is not None:
            # only q and b changed since the store's last solve: start from its factorizations
            values = arr[2][0] if isinstance(arr[2], tuple) else arr[2]
            kept = self._factored
            reuse = kept is not None and kept[0].shape == arr[0].shape and kept[1].shape == values.shape \
                and kept[0].dtype == arr[0].dtype and _np.array_equal(kept[0], arr[0]) \
                and _np.array_equal(kept[1], values)
            if not reuse:
                self._factored = None
        res = solve_qp_batch(*arr, cones=self.cones, eps=self.eps, max_iter=self.max_iter, precision=precision,
                             threads=self.threads, lanes=self.lanes, warm=warm, factors=self.factors,
                             reuse_factors=reuse)
        self.reused = reuse
        if self.factors is not None and self._factored is None:
            self._factored = (arr[0].copy(), values.copy())
        res.on_cuda = False
        self._take(res)
        dt = P.dtype
        return (_torch.from_numpy(res.x).to(dt), _torch.from_numpy(res.y).to(dt),
                _torch.from_numpy(_np.asarray(res.value)).to(dt))

    def _solve_cuda(self, P, q, A, b):
        """the batch solved on the GPU, its tensors staying there: impulse reads P, q, A, b
        and writes x, y, ... in the tensors' device memory (DLPack); only the per-problem
        status codes come to the host (for check)"""
        from . import cuda_available
        if not cuda_available():
            raise ValueError(f"P: a tensor on {P.device}, but impulse was built without CUDA kernels or sees no "
                             "device (impulse.cuda_available() is False)")
        dev, dt = P.device, P.dtype
        B, n, m = P.shape[0], P.shape[1], self.m
        Pd, qd, Ad, bd = (t.detach().contiguous() for t in (P, q, A, b))
        if self.pattern is not None:
            values, row_ptr, col = self._kept_values(Ad, _torch)
        else:  # every entry of A: the dense pattern
            values = Ad.reshape(B, m * n)
            row_ptr = _np.arange(0, m * n + 1, n, dtype=_np.int32)
            col = _np.tile(_np.arange(n, dtype=_np.int32), m)
        out = {k: _torch.empty(B, w, dtype=dt, device=dev) for k, w in (("x", n), ("y", m))}
        for k in ("objective", "value", "prim_res", "dual_res", "rho"):
            out[k] = _torch.empty(B, dtype=dt, device=dev)
        for k in ("status", "fault", "iterations"):
            out[k] = _torch.empty(B, dtype=_torch.int32, device=dev)
        wx = wy = wr = None
        last = self.last
        if self.warm and last is not None and last.on_cuda and tuple(last.x.shape) == (B, n) \
                and last.x.dtype == dt and bool((last.status == _SOLVED).all()):
            wx, wy, wr = last.x, last.y, last.rho
        _torch.cuda.current_stream(dev).synchronize()  # impulse runs on the legacy default stream
        fn = _impulse.solve_device_double if dt == _torch.float64 else _impulse.solve_device_float
        fn(Pd, qd, values, row_ptr, col, bd, self.cones, self.eps, self.max_iter, "auto", wx, wy, wr,
           *(out[k] for k in ("x", "y", "objective", "value", "prim_res", "dual_res", "rho", "status", "fault",
                              "iterations")))
        host = {k: out[k].cpu().numpy() for k in ("status", "fault", "iterations")}
        res = QpResult({**out, **host, "fault_text": [""] * B})
        res.on_cuda = True
        self._take(res)
        return out["x"], out["y"], out["value"]

    def _take(self, res):
        self.last = res
        if self.check:
            bad = _np.flatnonzero(res.status != _SOLVED)
            if bad.size:
                k = int(bad[0])
                why = f" ({res.fault_text[k]})" if res.fault_text[k] else ""
                raise RuntimeError(f"impulse.torch.ConicQP: {bad.size} of {len(res.status)} problems not solved; "
                                   f"problem {k}: {STATUS_NAMES[res.status[k]]}{why}")

    def __call__(self, P, q, A, b):
        one = P.dim() == 2
        if one:
            P, q, A, b = P[None], q[None], A[None], b[None]
        if P.dim() != 3 or q.dim() != 2 or A.dim() != 3 or b.dim() != 2:
            raise ValueError(f"expected P (B, n, n), q (B, n), A (B, m, n), b (B, m); got P {tuple(P.shape)}, "
                             f"q {tuple(q.shape)}, A {tuple(A.shape)}, b {tuple(b.shape)}")
        x, y, v = _ConicQPFunction.apply(P, q, A, b, self)
        return (x[0], y[0], v[0]) if one else (x, y, v)


class ConicQPLayer(_torch.nn.Module):
    """ConicQP as a torch.nn.Module that keeps what carries from one call to the next.

        layer = impulse.torch.ConicQPLayer(cones=(0, 6, 1))
        for P, q, A, b in batches:            # the same B problems, changing data
            x, y, value = layer(P, q, A, b)

    Kept between calls: A's sparsity pattern (the entries nonzero in the first call's
    batch, or `pattern=(row_ptr, col)` given; a later A with a nonzero outside it is
    refused with a ValueError naming the entry: make a new layer or call
    reset_pattern()), and the warm start: each problem starts from the previous call's
    x, y and final step size rho while the batch's shape stays the same (a training
    loop's QPs change little from step to step). With keep_factors (the default, CPU
    tensors), each problem's factorization too: a call whose P and A equal the
    previous call's (only q and b changed) starts from it, skipping P's and A's checks,
    the equilibration and the factorization (impulse.FactorStore); `reused` says
    whether the last call did. Options as ConicQP's. `last` is the last call's
    impulse.QpResult.
    """

    def __init__(self, cones, eps=1e-8, grad="implicit", *, pattern=None, max_iter=20000, threads=0, lanes=True,
                 check=True, keep_factors=True):
        super().__init__()
        self.qp = ConicQP(cones, eps, grad, max_iter=max_iter, threads=threads, lanes=lanes, warm=True, check=check)
        self.keep_factors = bool(keep_factors)
        self._given = pattern
        self.reset_pattern()

    def reset_pattern(self):
        """Forget the kept pattern (the next call finds it again), the warm start and the
        kept factorizations."""
        from . import FactorStore
        self.qp.pattern = None
        self.qp.last = None
        self.qp.factors = FactorStore() if self.keep_factors else None
        self.qp._factored = None
        self._found = False

    @property
    def last(self):
        return self.qp.last

    @property
    def reused(self):
        """whether the last call started from the kept factorizations"""
        return self.qp.reused

    def _keep_pattern(self, A):
        nz, nn, ns = self.qp.cones
        m = nz + nn + 3 * ns
        n = A.shape[-1]
        if A.dim() not in (2, 3) or A.shape[-2] != m:
            raise ValueError(f"A: expected (B, m, n) or (m, n) with m = {m} (from cones), got {tuple(A.shape)}")
        if self._given is not None:
            row_ptr = _np.ascontiguousarray(self._given[0], dtype=_np.int32)
            col = _np.ascontiguousarray(self._given[1], dtype=_np.int32)
            if row_ptr.shape != (m + 1,) or row_ptr[0] != 0 or row_ptr[-1] != col.shape[0] \
                    or (_np.diff(row_ptr) < 0).any() or (col.size and (col.min() < 0 or col.max() >= n)):
                raise ValueError(f"pattern: expected (row_ptr (m + 1 = {m + 1},) from 0 to len(col), col in "
                                 f"[0, {n})); got row_ptr {row_ptr.shape} and {col.shape[0]} columns")
            used = _np.zeros((m, n), bool)
            for i in range(m):
                used[i, col[row_ptr[i]:row_ptr[i + 1]]] = True
            if int(used.sum()) != col.shape[0]:
                raise ValueError("pattern: a column repeats within a row")
        else:
            used = (A.detach().reshape(-1, m, n) != 0).any(dim=0).cpu().numpy()
        # the CSR form of the mask: columns increasing along each row
        row_ptr = _np.concatenate([[0], _np.cumsum(used.sum(axis=1))]).astype(_np.int32)
        col = _np.nonzero(used)[1].astype(_np.int32)
        self.qp.pattern = (row_ptr, col, used)
        self._found = True

    def forward(self, P, q, A, b):
        if not self._found:
            self._keep_pattern(A)
        return self.qp(P, q, A, b)


# ---- the learning losses as differentiable functions ----------------------------------

def _as_rows(name, t, width):
    if not isinstance(t, _torch.Tensor):
        t = _torch.as_tensor(t)
    if t.dim() != 2 or t.shape[1] != width or t.shape[0] < 1:
        raise ValueError(f"{name}: expected (B, {width}) states, got {tuple(t.shape)}")
    if t.device.type != "cpu":
        raise ValueError(f"{name}: the learning losses take CPU tensors; got one on {t.device}")
    return t.detach().to(_torch.float64).contiguous()


class _PerTransitionLoss(_torch.autograd.Function):
    """per-transition losses (B,) of parameters (and a residual); the core gives each
    transition's gradient, the backward pass weighs them by the upstream gradient"""

    @staticmethod
    def forward(ctx, theta, residual, run):
        loss, g_theta, g_res = run(theta, residual, ctx.needs_input_grad[0] or ctx.needs_input_grad[1])
        ctx.save_for_backward(g_theta, g_res)
        ctx.dtypes = (theta.dtype, None if residual is None else residual.dtype)
        return loss.to(theta.dtype)

    @staticmethod
    def backward(ctx, g):
        g_theta, g_res = ctx.saved_tensors
        g = g.to(_torch.float64)
        gt = (g[:, None] * g_theta).sum(0).to(ctx.dtypes[0])
        gr = None if ctx.dtypes[1] is None else (g[:, None] * g_res).to(ctx.dtypes[1])
        return gt, gr, None


class ContactNetsLoss:
    """ContactNets' loss (Pfrommer et al. 2020, impulse's host/learning/contactnets_loss.h)
    of the Polytope model as a differentiable torch function, so a user can train it
    with their own optimizer:

        meta = impulse.load_tosses(path).meta
        loss_fn = impulse.torch.ContactNetsLoss(meta)
        theta = loss_fn.cube_parameters().requires_grad_(True)   # or any start (57,)
        L = loss_fn(theta, x, x_next)           # (B,): each transition's QP loss + regularizers
        L.mean().backward()                     # theta.grad

    theta: the Polytope's 57 parameters in SI (z (3), T row-major (6), the 8 normal
    vertices (24), the 8 tangent vertices (24); host/dynamics/polytope.h); x, x_next
    (B, 13) observed states (impulse's rows: load_tosses). meta: the data's body (a
    Tosses.meta dict: dt, mass, inertia, gravity, half_width, mu). friction: "cone" or
    "octagon"; eps: the loss QPs' tolerance (training's default). The loss QPs are
    solved cold (no warm start: a call does not know which transitions it had before).
    `last` holds the last call's counts (not_solved, iterations, qp_loss, reg_loss).
    """

    def __init__(self, meta, friction="cone", eps=1e-4, threads=0):
        self._core = _impulse.ContactNetsCore(dict(meta), friction, float(eps), int(threads))
        self._meta = dict(meta)
        self.last = None

    def cube_parameters(self):
        """the true cube of the data's meta (half_width, mu) as parameters (57,), float64"""
        return _torch.tensor(_impulse.ContactNetsCore.cube(self._meta), dtype=_torch.float64)

    def __call__(self, theta, x, x_next):
        if not isinstance(theta, _torch.Tensor) or theta.shape != (57,):
            raise ValueError(f"theta: expected a tensor of the Polytope's 57 parameters, got "
                             f"{tuple(theta.shape) if isinstance(theta, _torch.Tensor) else type(theta).__name__}")
        x, x_next = _as_rows("x", x, 13), _as_rows("x_next", x_next, 13)
        if x.shape != x_next.shape:
            raise ValueError(f"x_next: expected the shape of x {tuple(x.shape)}, got {tuple(x_next.shape)}")

        def run(th, _, want):
            B = x.shape[0]
            grad = _torch.zeros(B, 57, dtype=_torch.float64)
            d = self._core.evaluate(th.detach().to(_torch.float64).contiguous().numpy(), x.numpy(), x_next.numpy(),
                                    grad.numpy() if want else None)
            self.last = d
            qp = _torch.tensor(d["qp_loss"], dtype=_torch.float64)
            reg = _torch.tensor(d["reg_loss"], dtype=_torch.float64)
            return qp + reg, grad, None
        return _PerTransitionLoss.apply(theta, None, run)


class CcnLoss:
    """CCN's violation-implicit loss (Bianchini et al. 2023, impulse's host/learning/ccn.h)
    of a multibody system's model as a differentiable torch function, with the residual
    acceleration from the user's own module:

        loss_fn = impulse.torch.CcnLoss("elbow")
        theta = loss_fn.random_parameters(seed=0).requires_grad_(True)
        delta = my_net(features(x))             # (B, nv), or None for CCN without a residual
        L = loss_fn(theta, x, x_next, residual=delta)   # (B,) per transition
        L.mean().backward()                     # theta.grad and my_net's gradients

    system: a name or a system file (impulse.load_system, docs/systems.md).
    theta: the geometry (3 per contact vertex), the inertia (log-Cholesky, 10 per link)
    and mu, `parameter_count` numbers (host/learning/ccn.h); x, x_next (B, width) states
    of the system (load_tosses(path, system=...)); residual (B, nv) accelerations added
    to the dynamics, differentiable. dt: the data's time step; weights: the loss's
    weights {comp, diss, pen, res} (default: the paper's Table 2, real data); the
    residual network's weight penalty is the user's to add. eps: the QPs' tolerance.
    """

    def __init__(self, system, dt=0.0068, eps=1e-4, threads=0, weights=None):
        if not isinstance(system, (str, _os.PathLike)):
            raise ValueError(f"system: expected a system name (cube, asymmetric, elbow) or a .json / .urdf file, "
                             f"got {system!r}")
        system = _os.fspath(system)
        self.system = system
        self._core = _impulse.CcnCore(system, float(dt), float(eps), int(threads), dict(weights or {}))
        self.last = None

    @property
    def parameter_count(self):
        return self._core.parameter_count

    @property
    def nv(self):
        """the system's velocity count: the residual's width"""
        return self._core.nv

    @property
    def width(self):
        """the state width 13 + 2 joints"""
        return self._core.width

    def nominal_parameters(self):
        """the system's published geometry, inertia and friction as parameters, float64"""
        return _torch.tensor(self._core.nominal(), dtype=_torch.float64)

    def random_parameters(self, seed=0):
        """the paper's random initialization (App. A.4), seeded, float64"""
        return _torch.tensor(self._core.random(int(seed)), dtype=_torch.float64)

    def __call__(self, theta, x, x_next, residual=None):
        K = self.parameter_count
        if not isinstance(theta, _torch.Tensor) or theta.shape != (K,):
            raise ValueError(f"theta: expected a tensor of the model's {K} parameters, got "
                             f"{tuple(theta.shape) if isinstance(theta, _torch.Tensor) else type(theta).__name__}")
        x, x_next = _as_rows("x", x, self.width), _as_rows("x_next", x_next, self.width)
        if x.shape != x_next.shape:
            raise ValueError(f"x_next: expected the shape of x {tuple(x.shape)}, got {tuple(x_next.shape)}")
        B = x.shape[0]
        if residual is not None and (not isinstance(residual, _torch.Tensor) or residual.shape != (B, self.nv)):
            raise ValueError(f"residual: expected a ({B}, {self.nv}) tensor (B, nv), got "
                             f"{tuple(residual.shape) if isinstance(residual, _torch.Tensor) else type(residual).__name__}")

        def run(th, res, want):
            gt = _torch.zeros(B, K, dtype=_torch.float64)
            gd = _torch.zeros(B, self.nv, dtype=_torch.float64)
            r = None if res is None else res.detach().to(_torch.float64).contiguous().numpy()
            d = self._core.evaluate(th.detach().to(_torch.float64).contiguous().numpy(), x.numpy(), x_next.numpy(), r,
                                    gt.numpy() if want else None, gd.numpy() if want else None)
            self.last = d
            return _torch.tensor(d["loss"], dtype=_torch.float64), gt, gd
        return _PerTransitionLoss.apply(theta, residual, run)
