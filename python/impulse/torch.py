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
gradient for a symmetric P. CPU tensors, float64 or float32 (solved in that
precision). A problem that is not solved to eps raises RuntimeError naming it
and saying why (check=False returns its NaN or budget-limited answer instead).
"""
from __future__ import annotations

import numpy as _np
import torch as _torch

from . import STATUS_NAMES, _impulse, solve_qp_batch

__all__ = ["ConicQP", "ConicQPLayer", "soc_projection_derivative"]

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


class _ConicQPFunction(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, P, q, A, b, layer):
        res = layer._solve(P, q, A, b)
        dt, dev = P.dtype, P.device
        x = _torch.from_numpy(res.x).to(dev, dt)
        y = _torch.from_numpy(res.y).to(dev, dt)
        value = _torch.from_numpy(_np.asarray(res.value)).to(dev, dt)
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
        # impulse's adjoint (host/diff/qp_adjoint.h): the gradients are written into
        # these tensors' storage, problem by problem on the CPU threads
        gP, gq, gA, gb = (_torch.empty_like(t, memory_format=_torch.contiguous_format) for t in (P, x, A, y))
        cpu = [None if t is None else t.detach().contiguous().numpy() for t in (gx, gy, gv)]
        adjoint = _impulse.adjoint_double if P.dtype == _torch.float64 else _impulse.adjoint_float
        info = adjoint(*(t.detach().contiguous().numpy() for t in (P, A, b, x, y)), *cpu, layer.cones, layer.eps,
                       int(layer.threads), gP.numpy(), gq.numpy(), gA.numpy(), gb.numpy())
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

    @property
    def m(self):
        nz, nn, ns = self.cones
        return nz + nn + 3 * ns

    def _solve(self, P, q, A, b):
        for name, t in (("P", P), ("q", q), ("A", A), ("b", b)):
            if t.device.type != "cpu":
                raise ValueError(f"{name}: impulse.torch solves CPU tensors; got one on {t.device}")
            if t.dtype != P.dtype:
                raise ValueError(f"{name}: dtype {t.dtype} differs from P's {P.dtype}")
        if P.dtype not in (_torch.float64, _torch.float32):
            raise ValueError(f"P: expected float64 or float32, got {P.dtype}")
        precision = "double" if P.dtype == _torch.float64 else "float"
        arr = [t.detach().contiguous().numpy() for t in (P, q, A, b)]
        if self.pattern is not None:  # A's values in the kept pattern (an entry outside it is refused)
            row_ptr, col, used = self.pattern
            if arr[2].shape[1:] != used.shape:
                raise ValueError(f"A: shape {arr[2].shape} differs from the kept pattern's {(None,) + used.shape}")
            outside = arr[2][:, ~used]
            if outside.size and (outside != 0).any():
                k, e = (int(v) for v in _np.argwhere(outside != 0)[0])
                i, j = (int(v) for v in _np.argwhere(~used)[e])
                raise ValueError(f"A: entry ({i}, {j}) of problem {k} is nonzero outside the layer's kept pattern "
                                 "(make a new layer, or call reset_pattern())")
            arr[2] = (arr[2].reshape(arr[2].shape[0], -1) if used.all() else _np.ascontiguousarray(arr[2][:, used]),
                      row_ptr, col)
        warm = None
        if self.warm and self.last is not None and self.last.x.shape == (arr[0].shape[0], arr[0].shape[1]) \
                and self.last.y.shape == (arr[0].shape[0], self.m) and self.last.x.dtype == arr[0].dtype:
            warm = (self.last.x, self.last.y, self.last.rho)
        res = solve_qp_batch(*arr, cones=self.cones, eps=self.eps, max_iter=self.max_iter, precision=precision,
                             threads=self.threads, lanes=self.lanes, warm=warm)
        self.last = res
        if self.check:
            bad = _np.flatnonzero(res.status != _SOLVED)
            if bad.size:
                k = int(bad[0])
                raise RuntimeError(f"impulse.torch.ConicQP: {bad.size} of {len(res.status)} problems not solved; "
                                   f"problem {k}: {STATUS_NAMES[res.status[k]]} ({res.fault_text[k]})")
        return res

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
    loop's QPs change little from step to step). The factorization is not kept
    between calls: each call factors again.
    Options as ConicQP's. `last` is the last call's impulse.QpResult.
    """

    def __init__(self, cones, eps=1e-8, grad="implicit", *, pattern=None, max_iter=20000, threads=0, lanes=True,
                 check=True):
        super().__init__()
        self.qp = ConicQP(cones, eps, grad, max_iter=max_iter, threads=threads, lanes=lanes, warm=True, check=check)
        self._given = pattern
        self.reset_pattern()

    def reset_pattern(self):
        """Forget the kept pattern (the next call finds it again) and the warm start."""
        self.qp.pattern = None
        self.qp.last = None
        self._found = False

    @property
    def last(self):
        return self.qp.last

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
