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
  one (n + m) linear system per problem with F's Jacobian, in which Pi's
  derivative is 0 on the zero cone's rows, 0 or 1 on the nonnegative ones and
  the second-order cone's projection derivative on each cone's three rows (as
  diffcp and cvxpylayers do). Where that system is singular (a degenerate
  solution), its least-squares solution is used.
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

from . import STATUS_NAMES, solve_qp_batch

__all__ = ["ConicQP", "soc_projection_derivative", "cone_projection_derivative"]

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
        if layer.grad == "implicit" and (gx is not None or gy is not None):
            gx = _torch.zeros_like(x) if gx is None else gx
            gy = _torch.zeros_like(y) if gy is None else gy
            s = b - _torch.einsum("bmn,bn->bm", A, x)
            u = s - y
            # a multiplier within the solve's tolerance of zero marks a row inactive
            tol = 10 * layer.eps * _torch.clamp(y.abs().amax(dim=1, keepdim=True), min=1.0)
            D = cone_projection_derivative(u, layer.cones, tol)
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
        return gP, gq, gA, gb, None


class ConicQP:
    """A batch of conic QPs as a differentiable function of (P, q, A, b).

    cones = (n_zero, n_nonneg, n_soc): A's and b's rows in that order, three per
    second-order cone. eps: the solver's tolerance (absolute and relative); the
    gradients are as accurate as the solution. grad: "implicit" or "envelope"
    (module docstring). max_iter, threads, lanes: as impulse.solve_qp_batch.
    warm: start each call from the previous call's solution when the batch's
    shape is the same. check: raise RuntimeError when a problem is not solved.

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
        warm = None
        if self.warm and self.last is not None and self.last.x.shape == (arr[0].shape[0], arr[0].shape[1]) \
                and self.last.y.shape == (arr[0].shape[0], self.m) and self.last.x.dtype == arr[0].dtype:
            warm = (self.last.x, self.last.y)
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
