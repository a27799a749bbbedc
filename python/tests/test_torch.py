"""impulse.torch.ConicQP: the forward pass against known solutions, every gradient
against central differences (P kept symmetric), with active and inactive
nonnegative rows, equality rows, second-order cones on their boundary and inside;
the envelope gradient against the implicit one; bad input.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")
import impulse  # noqa: E402
import impulse.torch as it  # noqa: E402


def known_solution(seed, n, cones, soc_active=True, B=3):
    """B problems (P, q, A, b) whose solution x*, y* is known and strictly complementary:
    half the nonnegative rows active (s = 0 < y), half not (y = 0 < s); each second-order
    cone on its boundary with the dual on the opposite ray (soc_active) or s inside, y = 0."""
    rng = np.random.default_rng(seed)
    nz, nn, ns = cones
    m = nz + nn + 3 * ns
    P, q, A, b, X, Y = [], [], [], [], [], []
    for _ in range(B):
        M = rng.standard_normal((n, n))
        Pk = M @ M.T / n + 0.5 * np.eye(n)
        Ak = rng.standard_normal((m, n))
        x = rng.standard_normal(n)
        s = np.zeros(m)
        y = np.zeros(m)
        y[:nz] = rng.standard_normal(nz)
        for i in range(nn):
            if i % 2 == 0:
                y[nz + i] = rng.uniform(0.5, 1.5)
            else:
                s[nz + i] = rng.uniform(0.5, 1.5)
        for c in range(ns):
            r = nz + nn + 3 * c
            d = rng.standard_normal(2)
            d /= np.linalg.norm(d)
            if soc_active:
                a, w = rng.uniform(0.5, 1.5, 2)
                s[r:r + 3] = a * np.array([1.0, *d])
                y[r:r + 3] = w * np.array([1.0, *(-d)])
            else:
                s[r:r + 3] = np.array([1.5, *(0.5 * d)])
        b.append(Ak @ x + s)
        q.append(-Pk @ x - Ak.T @ y)
        P.append(Pk)
        A.append(Ak)
        X.append(x)
        Y.append(y)
    return tuple(np.array(v) for v in (P, q, A, b, X, Y))


CASES = {
    "nonneg": (0, 6, 0),
    "equality+nonneg": (2, 4, 0),
    "soc": (0, 0, 2),
    "all": (1, 3, 1),
}


def weights(shape_x, shape_y, seed=7):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape_x, generator=g, dtype=torch.float64),
            torch.randn(shape_y, generator=g, dtype=torch.float64),
            torch.randn(shape_x[0], generator=g, dtype=torch.float64))


def loss_of(layer, P, q, A, b, w, which):
    x, y, v = layer(P, q, A, b)
    parts = {"x": (w[0] * x).sum(), "y": (w[1] * y).sum(), "value": (w[2] * v).sum()}
    return sum(parts[k] for k in which)


def central_difference(f, t, h, symmetric=False):
    """d f / d t by central differences; for a symmetric t, the pair (i, j), (j, i) moved together"""
    g = torch.zeros_like(t)
    flat = t.reshape(-1)
    for i in range(flat.numel()):
        idx = np.unravel_index(i, t.shape)
        if symmetric and idx[-1] < idx[-2]:
            continue
        tp, tm = t.clone(), t.clone()
        for tt, sgn in ((tp, 1), (tm, -1)):
            tt[idx] += sgn * h
            if symmetric and idx[-1] != idx[-2]:
                j = idx[:-2] + (idx[-1], idx[-2])
                tt[j] += sgn * h
        d = (f(tp) - f(tm)) / (2 * h)
        if symmetric and idx[-1] != idx[-2]:
            j = idx[:-2] + (idx[-1], idx[-2])
            g[idx] = g[j] = d / 2  # the symmetrized gradient's entry: half the pair's derivative
        else:
            g[idx] = d
    return g


@pytest.mark.parametrize("case", list(CASES))
def test_forward_finds_the_known_solution(case):
    cones = CASES[case]
    P, q, A, b, X, Y = known_solution(1, 6, cones)
    layer = it.ConicQP(cones, eps=1e-12, max_iter=200000)
    x, y, v = layer(*(torch.from_numpy(a) for a in (P, q, A, b)))
    np.testing.assert_allclose(x.numpy(), X, atol=1e-9)
    np.testing.assert_allclose(y.numpy(), Y, atol=1e-9)
    obj = 0.5 * np.einsum("bi,bij,bj->b", X, P, X) + np.einsum("bi,bi->b", q, X)
    np.testing.assert_allclose(v.numpy(), obj, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("which", [("x",), ("y",), ("value",), ("x", "y", "value")])
@pytest.mark.parametrize("case", list(CASES))
def test_implicit_gradients_match_central_differences(case, which):
    cones = CASES[case]
    P, q, A, b, _, _ = known_solution(2, 6, cones, B=2)
    layer = it.ConicQP(cones, eps=1e-12, max_iter=200000)
    T = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    w = weights(tuple(T[1].shape), tuple(T[3].shape))
    loss_of(layer, *T, w, which).backward()
    h = 1e-5
    for i, name in enumerate("PqAb"):
        def f(t, i=i):
            args = [a.detach() for a in T]
            args[i] = t
            with torch.no_grad():
                return float(loss_of(layer, *args, w, which))
        fd = central_difference(f, T[i].detach(), h, symmetric=(name == "P"))
        np.testing.assert_allclose(T[i].grad.numpy(), fd.numpy(), rtol=2e-4, atol=2e-5,
                                   err_msg=f"{case}: d({'+'.join(which)})/d{name}")


def test_only_the_gradients_asked_for_are_computed():
    """inputs that need no gradient get none (P's and A's, the largest, are not computed);
    the others equal those of a call where every input needs one"""
    cones = (0, 2, 1)
    P, q, A, b, _, _ = known_solution(3, 6, cones, soc_active=True, B=3)
    layer = it.ConicQP(cones, eps=1e-12, max_iter=200000)
    full = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    w = weights(tuple(full[1].shape), tuple(full[3].shape), seed=4)
    loss_of(layer, *full, w, ("x", "y", "value")).backward()
    some = [torch.from_numpy(a).clone().requires_grad_(i in (1, 3)) for i, a in enumerate((P, q, A, b))]
    loss_of(layer, *some, w, ("x", "y", "value")).backward()
    assert some[0].grad is None and some[2].grad is None
    np.testing.assert_array_equal(some[1].grad.numpy(), full[1].grad.numpy())
    np.testing.assert_array_equal(some[3].grad.numpy(), full[3].grad.numpy())


def test_soc_inside_and_the_projection_derivative():
    # a cone whose s lies inside (y = 0): the gradient treats it as inactive
    cones = (0, 2, 1)
    P, q, A, b, _, Y = known_solution(3, 6, cones, soc_active=False, B=2)
    assert np.allclose(Y[:, 2:], 0)
    layer = it.ConicQP(cones, eps=1e-12, max_iter=200000)
    T = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    w = weights(tuple(T[1].shape), tuple(T[3].shape), seed=3)
    loss_of(layer, *T, w, ("x", "y")).backward()
    for i in (1, 3):
        def f(t, i=i):
            args = [a.detach() for a in T]
            args[i] = t
            with torch.no_grad():
                return float(loss_of(layer, *args, w, ("x", "y")))
        np.testing.assert_allclose(T[i].grad.numpy(), central_difference(f, T[i].detach(), 1e-5).numpy(),
                                   rtol=2e-4, atol=2e-5)
    # the SOC projection's derivative against central differences of the projection itself
    def proj(u):
        t, z = u[0], u[1:]
        nz = np.linalg.norm(z)
        if nz <= t:
            return u.copy()
        if nz <= -t:
            return np.zeros(3)
        a = (t + nz) / 2
        return np.array([a, *(a * z / nz)])
    rng = np.random.default_rng(0)
    for u in [rng.standard_normal(3) for _ in range(20)]:
        D = it.soc_projection_derivative(torch.from_numpy(u)).numpy()
        fd = np.stack([(proj(u + 1e-7 * e) - proj(u - 1e-7 * e)) / 2e-7 for e in np.eye(3)], axis=1)
        np.testing.assert_allclose(D, fd, atol=1e-6)


@pytest.mark.parametrize("case", list(CASES))
def test_envelope_gradient_is_the_implicit_value_gradient(case):
    cones = CASES[case]
    P, q, A, b, _, _ = known_solution(4, 6, cones)
    grads = {}
    for mode in ("implicit", "envelope"):
        T = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
        x, y, v = it.ConicQP(cones, eps=1e-12, grad=mode, max_iter=200000)(*T)
        v.sum().backward()
        grads[mode] = [t.grad.numpy() for t in T]
        if mode == "envelope":
            assert not x.requires_grad and not y.requires_grad
    for gi, ge, name in zip(grads["implicit"], grads["envelope"], "PqAb"):
        np.testing.assert_allclose(ge, gi, rtol=1e-6, atol=1e-7, err_msg=f"d value / d{name}")


def test_float_follows_double_and_one_problem_has_no_batch_dimension():
    cones = CASES["all"]
    P, q, A, b, X, _ = known_solution(5, 6, cones, B=1)
    T64 = [torch.from_numpy(a[0]).clone().requires_grad_(True) for a in (P, q, A, b)]
    T32 = [torch.from_numpy(a[0]).float().requires_grad_(True) for a in (P, q, A, b)]
    x64, _, v64 = it.ConicQP(cones, eps=1e-12, max_iter=200000)(*T64)
    x32, _, v32 = it.ConicQP(cones, eps=1e-5)(*T32)
    assert x64.shape == (6,) and v64.shape == () and x32.dtype == torch.float32
    np.testing.assert_allclose(x64.detach().numpy(), X[0], atol=1e-9)
    np.testing.assert_allclose(x32.detach().numpy(), X[0], atol=2e-3)
    (x64.sum() + v64).backward()
    (x32.sum() + v32).backward()
    for a, c in zip(T64, T32):
        np.testing.assert_allclose(c.grad.numpy(), a.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_bad_input_and_unsolved_problems_are_named():
    cones = (0, 2, 0)
    P = torch.eye(2, dtype=torch.float64)[None]
    q = torch.zeros(1, 2, dtype=torch.float64)
    A = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)
    with pytest.raises(ValueError, match="grad"):
        it.ConicQP(cones, grad="finite")
    with pytest.raises(ValueError, match="cones"):
        it.ConicQP((1, 2))
    with pytest.raises(ValueError, match="dtype"):
        it.ConicQP(cones)(P, q, A.float(), torch.zeros(1, 2))
    with pytest.raises(ValueError, match=r"\(B, m\)|b"):
        it.ConicQP(cones)(P, q, A, torch.zeros(1, 3, dtype=torch.float64))
    # x1 <= -1 and -x1 <= -0 (x1 >= 0): infeasible
    b = torch.tensor([[-1.0, 0.0]], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="problem 0: primal_infeasible"):
        it.ConicQP(cones)(P, q, A, b)
    layer = it.ConicQP(cones, check=False)
    layer(P, q, A, b)
    assert layer.last.status_names == ["primal_infeasible"]


def test_backward_runs_in_impulse_and_counts_its_systems():
    """the gradients come from host/diff/qp_adjoint.h: the reduced system's size is n plus
    the active rows (here 3 of 6 nonnegative rows and the boundary cone's 3)"""
    cones = CASES["all"]
    P, q, A, b, _, _ = known_solution(3, 6, cones, B=4)
    T = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    layer = it.ConicQP(cones, eps=1e-10, max_iter=100000)
    x, y, v = layer(*T)
    (x.sum() + y.sum() + v.sum()).backward()
    info = layer.last_backward
    assert info["least_squares"] == 0 and info["not_finite"] == 0
    assert info["largest_system"] == 6 + 1 + 2 + 3  # n, the equality, 2 active nonneg rows, the cone


def test_layer_keeps_its_pattern_and_warm_start_and_its_gradients_equal_fresh_ones():
    cones = (1, 4, 1)
    P, q, A, b, X, Y = known_solution(11, 6, cones, B=5)
    S = b - np.einsum("kmn,kn->km", A, X)
    A[:, :, 0] = 0.0  # a column zero in every problem: outside the kept pattern (same solution)
    b = np.einsum("kmn,kn->km", A, X) + S
    q = -np.einsum("kij,kj->ki", P, X) - np.einsum("kmn,km->kn", A, Y)
    layer = it.ConicQPLayer(cones, eps=1e-9, max_iter=100000)
    assert isinstance(layer, torch.nn.Module)
    T = [torch.from_numpy(a) for a in (P, q, A, b)]
    layer(*T)
    assert not layer.reused  # (nothing kept yet)
    cold_iters = layer.last.iterations.copy()
    row_ptr, col, used = layer.qp.pattern
    assert not used[:, 0].any() and used[:, 1:].all() and col.shape[0] == A.shape[1] * 5
    # the next step's data: q and b moved a little; it starts where the last call ended
    rng = np.random.default_rng(2)
    q2 = q + 1e-3 * rng.standard_normal(q.shape)
    b2 = b + 1e-3 * rng.standard_normal(b.shape)
    T2 = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q2, A, b2)]
    x, y, v = layer(*T2)
    assert layer.reused  # the same P and A: it started from the kept factorizations
    assert layer.last.iterations.sum() < cold_iters.sum()
    (x.sum() + 2 * y.sum() + v.sum()).backward()
    F2 = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q2, A, b2)]
    xf, yf, vf = it.ConicQP(cones, eps=1e-9, max_iter=100000)(*F2)
    (xf.sum() + 2 * yf.sum() + vf.sum()).backward()
    np.testing.assert_allclose(x.detach().numpy(), xf.detach().numpy(), atol=1e-6)
    for a, f in zip(T2, F2):
        np.testing.assert_allclose(a.grad.numpy(), f.grad.numpy(), atol=1e-5)
    # an entry outside the kept pattern is refused, by name; reset_pattern forgets it
    A3 = A.copy()
    A3[2, 1, 0] = 0.5
    with pytest.raises(ValueError, match=r"entry \(1, 0\) of problem 2 is nonzero outside"):
        layer(*(torch.from_numpy(a) for a in (P, q, A3, b)))
    layer.reset_pattern()
    layer(*(torch.from_numpy(a) for a in (P, q, A3, b)))
    assert layer.qp.pattern[2][1, 0] and not layer.reused  # (a new A: factored again)
    # without kept factorizations: the same gradients (to the tolerance), nothing reused
    plain = it.ConicQPLayer(cones, eps=1e-9, max_iter=100000, keep_factors=False)
    plain(*T)
    N2 = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q2, A, b2)]
    xn, yn, vn = plain(*N2)
    assert not plain.reused
    (xn.sum() + 2 * yn.sum() + vn.sum()).backward()
    for a, f in zip(T2, N2):
        np.testing.assert_allclose(a.grad.numpy(), f.grad.numpy(), atol=1e-5)


def test_solve_qp_batch_keeps_factors_for_new_q_and_b():
    cones = CASES["all"]
    P, q, A, b, _, _ = known_solution(21, 6, cones, B=13)
    rng = np.random.default_rng(5)
    q2 = q + 0.05 * rng.standard_normal(q.shape)
    b2 = b + 0.01 * rng.standard_normal(b.shape)
    for lanes in (True, False):
        store = impulse.FactorStore()
        first = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-9, max_iter=100000, lanes=lanes, factors=store)
        assert first.solved.all() and store.bytes > 0
        fresh = impulse.solve_qp_batch(P, q2, A, b2, cones, eps=1e-9, max_iter=100000, lanes=lanes)
        kept = impulse.solve_qp_batch(P, q2, A, b2, cones, eps=1e-9, max_iter=100000, lanes=lanes, factors=store,
                                      reuse_factors=True)
        assert kept.solved.all()
        np.testing.assert_allclose(kept.x, fresh.x, atol=1e-6)
        np.testing.assert_allclose(kept.objective, fresh.objective, rtol=1e-7, atol=1e-7)
        # cleared, a re-solve is the full one, bit for bit
        store.clear()
        again = impulse.solve_qp_batch(P, q2, A, b2, cones, eps=1e-9, max_iter=100000, lanes=lanes, factors=store,
                                       reuse_factors=True)
        assert np.array_equal(again.x, fresh.x)
    with pytest.raises(ValueError, match="reuse_factors"):
        impulse.solve_qp_batch(P, q, A, b, cones, reuse_factors=True)
    with pytest.raises(ValueError, match="factors"):
        impulse.solve_qp_batch(P, q, A, b, cones, factors="a store")
    with pytest.raises(ValueError, match="factors"):
        impulse.solve_qp_batch(P, q, A, b, cones, factors=impulse.FactorStore(), backend="cuda")


def test_layer_takes_a_given_pattern_and_refuses_a_wrong_one():
    cones = (0, 3, 0)
    P = np.tile(np.eye(2), (2, 1, 1))
    q = np.array([[1.0, 1.0], [2.0, -1.0]])
    A = np.zeros((2, 3, 2))
    A[:, 0, 0], A[:, 1, 1], A[:, 2, 0], A[:, 2, 1] = -1, -1, 1, 1  # x >= 0, x1 + x2 <= 1
    b = np.array([[0.0, 0.0, 1.0]] * 2)
    good = it.ConicQPLayer(cones, pattern=(np.array([0, 1, 2, 4]), np.array([0, 1, 1, 0])))  # unsorted row 2
    x, _, _ = good(*(torch.from_numpy(a) for a in (P, q, A, b)))
    np.testing.assert_allclose(x.numpy(), [[0, 0], [0, 1]], atol=1e-6)
    with pytest.raises(ValueError, match="pattern"):
        it.ConicQPLayer(cones, pattern=(np.array([0, 1, 2]), np.array([0, 1])))(
            *(torch.from_numpy(a) for a in (P, q, A, b)))


def test_warm_rho_is_taken_and_checked():
    cones = CASES["all"]
    P, q, A, b, _, _ = known_solution(4, 6, cones, B=3)
    res = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-9, max_iter=100000)
    again = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-9, max_iter=100000, warm=(res.x, res.y, res.rho))
    assert (again.iterations <= 2 * 25).all() and again.solved.all()
    with pytest.raises(ValueError, match="warm rho"):
        impulse.solve_qp_batch(P, q, A, b, cones, warm=(res.x, res.y, -res.rho))
    with pytest.raises(ValueError, match="warm rho"):
        impulse.solve_qp_batch(P, q, A, b, cones, warm=(res.x, res.y, res.rho[:2]))


@pytest.mark.parametrize("case", list(CASES))
def test_the_torch_adjoint_of_device_tensors_equals_impulses(case):
    """adjoint_torch (the backward pass of CUDA tensors, in torch operations) against
    impulse's C++ adjoint, run here on CPU tensors: the same gradients"""
    cones = CASES[case]
    P, q, A, b, _, _ = known_solution(8, 7, cones, B=5)
    T = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    layer = it.ConicQP(cones, eps=1e-10, max_iter=100000)
    x, y, v = layer(*T)
    w = weights(x.shape, y.shape)
    ((w[0] * x).sum() + (w[1] * y).sum() + (w[2] * v).sum()).backward()
    g = it.adjoint_torch(T[0].detach(), T[2].detach(), T[3].detach(), x.detach(), y.detach(), w[0], w[1], w[2],
                         cones, 1e-10)
    for t, gt in zip(T, g):
        np.testing.assert_allclose(t.grad.numpy(), gt.numpy(), rtol=1e-8, atol=1e-9)


def test_cuda_tensors_stay_on_the_device_and_agree_with_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch here: the CUDA tensor path runs where one is")
    if not impulse.cuda_available():
        pytest.skip("impulse was built without CUDA kernels (or sees no device)")
    cones = CASES["all"]
    P, q, A, b, X, _ = known_solution(12, 8, cones, B=64)
    cpu = [torch.from_numpy(a).clone().requires_grad_(True) for a in (P, q, A, b)]
    gpu = [torch.from_numpy(a).cuda().requires_grad_(True) for a in (P, q, A, b)]
    lc, lg = it.ConicQP(cones, eps=1e-9, max_iter=100000), it.ConicQP(cones, eps=1e-9, max_iter=100000)
    xc, yc, vc = lc(*cpu)
    xg, yg, vg = lg(*gpu)
    assert xg.device.type == "cuda" and yg.device.type == "cuda" and vg.device.type == "cuda"
    np.testing.assert_allclose(xg.detach().cpu().numpy(), X, atol=1e-6)
    np.testing.assert_allclose(xg.detach().cpu().numpy(), xc.detach().numpy(), atol=1e-6)
    (xc.sum() + yc.sum() + vc.sum()).backward()
    (xg.sum() + yg.sum() + vg.sum()).backward()
    for c, g in zip(cpu, gpu):
        assert g.grad.device.type == "cuda"
        np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-4, atol=1e-5)
