"""impulse against solvers it does not share code with, from PyPI: the optimal values
of random conic QPs of each cone kind against Clarabel (an interior-point conic
solver), and impulse.torch's gradients against cvxpylayers (diffcp's implicit
differentiation). Each part skips with a message where its peer does not install.
"""
import numpy as np
import pytest

import impulse


def random_conic_qps(seed, B, n, cones):
    """B feasible, bounded conic QPs: P positive definite, b = A x0 + s0 with s0 inside K"""
    rng = np.random.default_rng(seed)
    nz, nn, ns = cones
    m = nz + nn + 3 * ns
    M = rng.standard_normal((B, n, n))
    P = M @ M.transpose(0, 2, 1) / n + 0.1 * np.eye(n)
    q = rng.standard_normal((B, n))
    A = rng.standard_normal((B, m, n))
    s0 = np.zeros((B, m))
    s0[:, nz:nz + nn] = rng.uniform(0.1, 1.0, (B, nn))
    for c in range(ns):
        r = nz + nn + 3 * c
        u = rng.standard_normal((B, 2)) * 0.5
        s0[:, r] = np.linalg.norm(u, axis=1) + rng.uniform(0.1, 0.5, B)
        s0[:, r + 1:r + 3] = u
    b = np.einsum("bmn,bn->bm", A, rng.standard_normal((B, n))) + s0
    return P, q, A, b


@pytest.mark.parametrize("cones", [(0, 8, 0), (3, 6, 0), (0, 0, 3), (2, 4, 2)])
def test_optimal_values_match_clarabel(cones):
    clarabel = pytest.importorskip("clarabel", reason="Clarabel is not installed (pip install clarabel)")
    sp = pytest.importorskip("scipy.sparse", reason="SciPy is not installed")
    B, n = 12, 6
    P, q, A, b = random_conic_qps(sum(cones), B, n, cones)
    res = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-9, max_iter=100000)
    assert res.solved.all(), res.fault_text
    nz, nn, ns = cones
    for k in range(B):
        kinds = ([clarabel.ZeroConeT(nz)] if nz else []) + ([clarabel.NonnegativeConeT(nn)] if nn else []) + \
            [clarabel.SecondOrderConeT(3) for _ in range(ns)]
        st = clarabel.DefaultSettings()
        st.verbose = False
        st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-10
        sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(P[k])), q[k], sp.csc_matrix(A[k]), b[k], kinds, st).solve()
        assert str(sol.status) == "Solved", sol.status
        assert abs(res.objective[k] - sol.obj_val) <= 1e-6 * (1 + abs(sol.obj_val)), (k, res.objective[k], sol.obj_val)
        np.testing.assert_allclose(res.x[k], np.array(sol.x), atol=1e-5)


def test_gradients_match_cvxpylayers():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    cp = pytest.importorskip("cvxpy", reason="CVXPY is not installed")
    layers = pytest.importorskip("cvxpylayers.torch", reason="cvxpylayers is not installed (pip install cvxpylayers)")
    import impulse.torch as it
    cones = (1, 4, 1)
    nz, nn, ns = cones
    B, n, m = 3, 5, 8
    P, q, A, b = random_conic_qps(9, B, n, cones)
    # the same problems in CVXPY, P = L L' with L a constant per problem (DPP: q, A, b parameters)
    grads_ref = []
    for k in range(B):
        L = np.linalg.cholesky(P[k])
        x = cp.Variable(n)
        qp, Ap, bp = cp.Parameter(n), cp.Parameter((m, n)), cp.Parameter(m)
        s = bp - Ap @ x
        cons = [s[:nz] == 0, s[nz:nz + nn] >= 0, cp.SOC(s[nz + nn], s[nz + nn + 1:nz + nn + 3])]
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ x) + qp @ x), cons)
        layer = layers.CvxpyLayer(prob, parameters=[qp, Ap, bp], variables=[x])
        tq, tA, tb = (torch.tensor(v[k], requires_grad=True) for v in (q, A, b))
        (xs,) = layer(tq, tA, tb, solver_args={"eps": 1e-10, "max_iters": 100000})
        (xs * torch.arange(1.0, n + 1, dtype=xs.dtype)).sum().backward()
        grads_ref.append((xs.detach().numpy(), tq.grad.numpy(), tA.grad.numpy(), tb.grad.numpy()))
    T = [torch.tensor(v, requires_grad=True) for v in (P, q, A, b)]
    x, _, _ = it.ConicQP(cones, eps=1e-11, max_iter=200000)(*T)
    (x * torch.arange(1.0, n + 1, dtype=x.dtype)).sum().backward()
    for k in range(B):
        xr, gq, gA, gb = grads_ref[k]
        np.testing.assert_allclose(x[k].detach().numpy(), xr, atol=1e-6)
        np.testing.assert_allclose(T[1].grad[k].numpy(), gq, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(T[2].grad[k].numpy(), gA, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(T[3].grad[k].numpy(), gb, rtol=1e-5, atol=1e-6)
