"""impulse.solve_qp_batch: answers checked against the optimality conditions and the
CLI's own solve of the same batch, and bad input refused by name."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import impulse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def random_batch(B, n, cones, seed=0, dtype=np.float64):
    """feasible, bounded conic QPs: P = G G' + I/10; s0 in K and x0 give b = A x0 + s0"""
    nz, nn, ns = cones
    m = nz + nn + 3 * ns
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((B, n, n))
    P = G @ G.transpose(0, 2, 1) / n + 0.1 * np.eye(n)
    q = rng.standard_normal((B, n))
    A = rng.standard_normal((B, m, n))
    x0 = rng.standard_normal((B, n))
    s0 = np.zeros((B, m))
    s0[:, nz:nz + nn] = rng.uniform(0, 1, (B, nn))
    for c in range(ns):
        u = rng.standard_normal((B, 2))
        r = nz + nn + 3 * c
        s0[:, r] = np.linalg.norm(u, axis=1) + rng.uniform(0, 1, B)
        s0[:, r + 1:r + 3] = u
    b = np.einsum("bij,bj->bi", A, x0) + s0
    return [a.astype(dtype) for a in (P, q, A, b)]


def kkt(P, q, A, b, cones, x, y):
    """the worst of: stationarity, s in K, y in K*, complementarity (per problem)"""
    nz, nn, ns = cones
    stat = np.abs(np.einsum("bij,bj->bi", P, x) + q + np.einsum("bji,bj->bi", A, y)).max(axis=1)
    s = b - np.einsum("bij,bj->bi", A, x)
    worst = np.maximum(stat, np.abs(s[:, :nz]).max(axis=1, initial=0))
    worst = np.maximum(worst, (-s[:, nz:nz + nn]).max(axis=1, initial=0))
    worst = np.maximum(worst, (-y[:, nz:nz + nn]).max(axis=1, initial=0))
    for c in range(ns):
        r = nz + nn + 3 * c
        worst = np.maximum(worst, np.linalg.norm(s[:, r + 1:r + 3], axis=1) - s[:, r])
        worst = np.maximum(worst, np.linalg.norm(y[:, r + 1:r + 3], axis=1) - y[:, r])
    gap = np.abs(np.einsum("bi,bi->b", s[:, nz:], y[:, nz:]))
    return np.maximum(worst, gap)


@pytest.mark.parametrize("cones", [(2, 0, 0), (0, 6, 0), (0, 0, 3), (1, 4, 2)])
@pytest.mark.parametrize("lanes", [True, False])
def test_every_cone_kind_solves_to_its_optimality_conditions(cones, lanes):
    P, q, A, b = random_batch(200, 6, cones, seed=sum(cones))
    res = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-8, lanes=lanes)
    assert res.solved.all(), res
    scale = 1 + np.abs(q).max() + np.abs(b).max()
    assert kkt(P, q, A, b, cones, res.x, res.y).max() < 1e-6 * scale
    # the value at the solution, and the objective reported
    obj = 0.5 * np.einsum("bi,bij,bj->b", res.x, P, res.x) + np.einsum("bi,bi->b", q, res.x)
    np.testing.assert_allclose(res.objective, obj, rtol=1e-9, atol=1e-9)


def test_float_precision_solves_too():
    cones = (0, 4, 1)
    P, q, A, b = random_batch(64, 5, cones, seed=3, dtype=np.float32)
    res = impulse.solve_qp_batch(P, q, A, b, cones, precision="float", eps=1e-4)
    assert res.x.dtype == np.float32
    assert (res.status <= 2).all(), res
    assert kkt(*(a.astype(np.float64) for a in (P, q, A, b)), cones, res.x.astype(np.float64),
               res.y.astype(np.float64)).max() < 1e-2


def test_a_warm_start_from_the_solution_stops_at_once():
    cones = (0, 6, 1)
    P, q, A, b = random_batch(50, 6, cones, seed=5)
    cold = impulse.solve_qp_batch(P, q, A, b, cones)
    warm = impulse.solve_qp_batch(P, q, A, b, cones, warm=(cold.x, cold.y))
    assert warm.solved.all()
    assert warm.iterations.mean() < 0.5 * cold.iterations.mean()


def cli():
    for path in (os.environ.get("IMPULSE_CLI"), os.path.join(ROOT, "build", "impulse"),
                 os.path.join(ROOT, "build-nocuda", "impulse"), shutil.which("impulse")):
        if path and os.path.exists(path):
            return path
    return None


def test_solutions_equal_the_clis_bit_for_bit(tmp_path):
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built (build/impulse; or set IMPULSE_CLI)")
    cones = (1, 4, 2)
    P, q, A, b = random_batch(100, 7, cones, seed=11)
    np.savez(tmp_path / "batch.npz", cones=np.array(cones, np.int32), P=P, q=q, A=A, b=b)
    subprocess.run([exe, "solve-batch", "--in", str(tmp_path / "batch.npz"), "--out", str(tmp_path / "sol.npz")],
                   check=True, capture_output=True)
    sol = np.load(tmp_path / "sol.npz")
    res = impulse.solve_qp_batch(P, q, A, b, cones)
    np.testing.assert_array_equal(res.x, sol["x"])
    np.testing.assert_array_equal(res.y, sol["y"])
    np.testing.assert_array_equal(res.status, sol["status"])
    np.testing.assert_array_equal(res.iterations, sol["iterations"])
    np.testing.assert_array_equal(res.ipm_iterations, sol["ipm_iterations"])


def test_the_switch_to_the_interior_point_is_the_clis(tmp_path):
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built (build/impulse; or set IMPULSE_CLI)")
    f = tmp_path / "random.npz"
    subprocess.run([exe, "generate", "--kind", "random", "--n", "24", "--count", "24", "--seed", "4", "--out", str(f)],
                   check=True, capture_output=True)
    z = np.load(f)
    P, q, A, b, cones = z["P"], z["q"], z["A"], z["b"], tuple(int(c) for c in z["cones"])
    subprocess.run([exe, "solve-batch", "--in", str(f), "--out", str(tmp_path / "sol.npz"), "--eps", "1e-6",
                    "--ipm-switch", "250"], check=True, capture_output=True)
    sol = np.load(tmp_path / "sol.npz")
    res = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-6, ipm_switch=250)
    assert res.solved.all() and (res.ipm_iterations > 0).sum() >= 2  # half their rows active: ADMM is slow
    np.testing.assert_array_equal(res.x, sol["x"])
    np.testing.assert_array_equal(res.ipm_iterations, sol["ipm_iterations"])
    # without it these go to the interior point too, but only at a stall (Anderson's budget
    # of max_iter / 8 spent): later, and fewer of them
    off = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-6, ipm_switch=0)
    assert off.iterations.sum() > res.iterations.sum()
    assert (off.ipm_iterations > 0).sum() <= (res.ipm_iterations > 0).sum()
    admm_on = (res.iterations - res.ipm_iterations)[res.ipm_iterations > 0]
    admm_off = (off.iterations - off.ipm_iterations)[off.ipm_iterations > 0]
    assert admm_on.max() < admm_off.min()
    # the default, "auto" (a threshold from the batch's shape), as the CLI's default, bit for bit
    subprocess.run([exe, "solve-batch", "--in", str(f), "--out", str(tmp_path / "auto.npz"), "--eps", "1e-6"],
                   check=True, capture_output=True)
    cli_auto = np.load(tmp_path / "auto.npz")
    auto = impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-6)
    np.testing.assert_array_equal(auto.x, cli_auto["x"])
    np.testing.assert_array_equal(auto.ipm_iterations, cli_auto["ipm_iterations"])
    np.testing.assert_array_equal(auto.x, impulse.solve_qp_batch(P, q, A, b, cones, eps=1e-6, ipm_switch="auto").x)
    assert auto.solved.all() and (auto.ipm_iterations > 0).sum() >= 2
    # and it is not "off": the hand-overs come early (off's come only at a stall)
    assert auto.iterations.sum() < off.iterations.sum()
    auto_admm = (auto.iterations - auto.ipm_iterations)[auto.ipm_iterations > 0]
    assert auto_admm.max() < admm_off.min()
    for bad in (-1, "fast", True):
        with pytest.raises(ValueError, match="ipm_switch"):
            impulse.solve_qp_batch(P, q, A, b, cones, ipm_switch=bad)


def test_bad_input_is_refused_by_name():
    cones = (0, 4, 1)
    P, q, A, b = random_batch(8, 5, cones)
    with pytest.raises(ValueError, match="q: expected shape"):
        impulse.solve_qp_batch(P, q[:, :4], A, b, cones)
    with pytest.raises(ValueError, match="A: expected shape"):
        impulse.solve_qp_batch(P, q, A[:, :5], b, cones)
    with pytest.raises(ValueError, match="b: expected 2 dimensions"):
        impulse.solve_qp_batch(P, q, A, b[0], cones)
    with pytest.raises(ValueError, match="P: expected numbers"):
        impulse.solve_qp_batch(P.astype(str), q, A, b, cones)
    with pytest.raises(ValueError, match="the batch is empty"):
        impulse.solve_qp_batch(P[:0], q[:0], A[:0], b[:0], cones)
    with pytest.raises(ValueError, match="cones"):
        impulse.solve_qp_batch(P, q, A, b, (0, -1, 1))
    with pytest.raises(ValueError, match="precision"):
        impulse.solve_qp_batch(P, q, A, b, cones, precision="half")
    with pytest.raises(ValueError, match="backend"):
        impulse.solve_qp_batch(P, q, A, b, cones, backend="tpu")
    with pytest.raises(ValueError, match="eps"):
        impulse.solve_qp_batch(P, q, A, b, cones, eps=0)
    with pytest.raises(ValueError, match="threads"):
        impulse.solve_qp_batch(P, q, A, b, cones, threads=-2)


def test_a_bad_problem_keeps_to_itself():
    cones = (0, 4, 1)
    P, q, A, b = random_batch(16, 5, cones)
    P[3, 0, 0] = np.nan
    P[5] = -np.eye(5)  # not positive semidefinite
    res = impulse.solve_qp_batch(P, q, A, b, cones)
    bad = {3, 5}
    for k in range(16):
        if k in bad:
            assert res.status_names[k] == "invalid_input", (k, res.fault_text[k])
            assert res.fault_text[k], k
        else:
            assert res.solved[k], (k, res.fault_text[k])


def test_arrays_of_another_layout_or_type_are_converted():
    cones = (0, 4, 1)
    P, q, A, b = random_batch(10, 5, cones)
    ref = impulse.solve_qp_batch(P, q, A, b, cones)
    Pf = np.asfortranarray(P)
    res = impulse.solve_qp_batch(Pf, q.tolist(), A, b, cones)
    np.testing.assert_array_equal(res.x, ref.x)


def test_the_package_says_its_version_and_device():
    assert impulse.__version__.count(".") == 2
    assert isinstance(impulse.cuda_available(), bool)
    assert impulse.STATUS_NAMES[1] == "solved" and impulse.STATUS_NAMES[7] == "invalid_input"


def osqp_batch(seed, B, n=6, m=8):
    """B strictly convex QPs in OSQP's form with every kind of row: 0-1 upper bounds,
    2-3 lower bounds, 4-5 both, 6 an equality, 7 free"""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((B, n, n))
    P = M @ M.transpose(0, 2, 1) / n + 0.1 * np.eye(n)
    q = rng.standard_normal((B, n))
    A = rng.standard_normal((B, m, n))
    l = np.full((B, m), -np.inf)
    u = np.full((B, m), np.inf)
    u[:, 0:2] = rng.uniform(-0.5, 0.5, (B, 2))
    l[:, 2:4] = rng.uniform(-0.5, 0.5, (B, 2))
    l[:, 4:6] = -0.3; u[:, 4:6] = 0.2
    l[:, 6] = u[:, 6] = rng.uniform(-0.2, 0.2, B)
    return P, q, A, l, u


def test_osqp_form_matches_the_conic_form_and_its_kkt():
    B = 5
    P, q, A, l, u = osqp_batch(11, B)
    r = impulse.solve_qp_batch_osqp(P, q, A, l, u, eps=1e-10, max_iter=100000)
    assert r.status_names == ["solved"] * B
    x, y = r.x, r.y
    Ax = np.einsum("bmn,bn->bm", A, x)
    # OSQP's conditions: P x + q + A'y = 0, l <= A x <= u, y+ at u, y- at l, y = 0 where free
    np.testing.assert_allclose(np.einsum("bij,bj->bi", P, x) + q + np.einsum("bmn,bm->bn", A, y), 0, atol=1e-7)
    assert (Ax >= l - 1e-7).all() and (Ax <= u + 1e-7).all()
    assert (np.abs(np.where(y > 1e-7, Ax - u, 0)) < 1e-6).all()
    assert (np.abs(np.where(y < -1e-7, Ax - l, 0)) < 1e-6).all()
    assert np.abs(y[:, 7]).max() < 1e-8
    # the same problems written in the conic form by hand
    Ac = np.concatenate([A[:, 6:7], A[:, 0:2], A[:, 4:6], -A[:, 2:4], -A[:, 4:6]], axis=1)
    bc = np.concatenate([u[:, 6:7], u[:, 0:2], u[:, 4:6], -l[:, 2:4], -l[:, 4:6]], axis=1)
    rc = impulse.solve_qp_batch(P, q, Ac, bc, (1, 8, 0), eps=1e-10, max_iter=100000)
    np.testing.assert_array_equal(rc.x, r.x)


def test_the_clis_osqp_form_equals_solve_qp_batch_osqp(tmp_path):
    """solve-batch --form osqp and impulse.solve_qp_batch_osqp: the same conversion
    (host/batch/qp_forms), the same solutions bit for bit, y in the file's rows"""
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built (build/impulse; or set IMPULSE_CLI)")
    B, m = 40, 8
    P, q, A, l, u = osqp_batch(5, B)
    np.savez(tmp_path / "osqp.npz", P=P, q=q, A=A, l=l, u=u)
    subprocess.run([exe, "solve-batch", "--form", "osqp", "--in", str(tmp_path / "osqp.npz"),
                    "--out", str(tmp_path / "sol.npz"), "--eps", "1e-7"], check=True, capture_output=True)
    sol = np.load(tmp_path / "sol.npz")
    r = impulse.solve_qp_batch_osqp(P, q, A, l, u, eps=1e-7)
    assert sol["y"].shape == (B, m)
    np.testing.assert_array_equal(r.x, sol["x"])
    np.testing.assert_array_equal(r.y, sol["y"])
    np.testing.assert_array_equal(r.status, sol["status"])
    np.testing.assert_array_equal(r.iterations, sol["iterations"])


def test_osqp_form_names_bad_rows():
    P = np.eye(2)[None].repeat(2, 0)
    q = np.zeros((2, 2))
    A = np.ones((2, 1, 2))
    with pytest.raises(ValueError, match="row 0: an upper bound in problem 0 but a lower bound in problem 1"):
        impulse.solve_qp_batch_osqp(P, q, A, np.array([[-np.inf], [0.0]]), np.array([[1.0], [np.inf]]))
    with pytest.raises(ValueError, match="l > u at problem 1, row 0"):
        impulse.solve_qp_batch_osqp(P, q, A, np.array([[0.0], [2.0]]), np.array([[1.0], [1.0]]))
    with pytest.raises(ValueError, match="u: expected shape"):
        impulse.solve_qp_batch_osqp(P, q, A, np.zeros((2, 1)), np.zeros((2, 2)))


def _address(a):
    return a.__array_interface__["data"][0]


def test_arrays_are_read_in_place_without_a_copy():
    rng = np.random.default_rng(3)
    B, n, m = 40, 5, 4
    M = rng.standard_normal((B, n, n))
    P = M @ M.transpose(0, 2, 1) + np.eye(n)
    q = rng.standard_normal((B, n))
    A = rng.standard_normal((B, m, n))          # every entry nonzero: a dense pattern
    b = rng.uniform(0.5, 1.0, (B, m))
    r = impulse.solve_qp_batch(P, q, A, b, cones=(0, m, 0))
    assert r.solved.all()
    for name, arr in (("P", P), ("q", q), ("A", A), ("b", b)):
        assert r._read_from[name] == _address(arr), f"{name} was copied"
    # float32 in place too
    r32 = impulse.solve_qp_batch(P.astype(np.float32), q.astype(np.float32), A.astype(np.float32),
                                 b.astype(np.float32), cones=(0, m, 0), precision="float")
    assert r32.solved.all()
    # a CSR A (values, row_ptr, col): read in place, the same answers bit for bit
    A[:, 1, 2] = 0.0                            # zero in every problem: the dense form gathers the others
    row_ptr = np.array([0, 5, 9, 14, 19], dtype=np.int32)
    col = np.array([0, 1, 2, 3, 4, 0, 1, 3, 4] + [0, 1, 2, 3, 4] * 2, dtype=np.int32)
    values = np.ascontiguousarray(A.reshape(B, m * n)[:, [c for c in range(m * n) if c != 1 * n + 2]])
    rc = impulse.solve_qp_batch(P, q, (values, row_ptr, col), b, cones=(0, m, 0))
    rd = impulse.solve_qp_batch(P, q, A, b, cones=(0, m, 0))
    assert rc._read_from["A"] == _address(values)
    assert rd._read_from["A"] != _address(A)     # gathered: the pattern skips the zero column
    np.testing.assert_array_equal(rc.x, rd.x)
    np.testing.assert_array_equal(rc.y, rd.y)
    # arrays that are not C-contiguous or not of the precision's type: converted once, same answers
    Pf = np.asfortranarray(P)
    rf = impulse.solve_qp_batch(Pf, q, A, b, cones=(0, m, 0))
    assert rf._read_from["P"] != _address(Pf)
    np.testing.assert_array_equal(rf.x, rd.x)


def test_a_bad_csr_pattern_is_named():
    P = np.eye(2)[None]
    q = np.zeros((1, 2))
    b = np.ones((1, 2))
    with pytest.raises(ValueError, match="columns must lie in"):
        impulse.solve_qp_batch(P, q, (np.ones((1, 2)), np.array([0, 1, 2]), np.array([0, 5])), b, cones=(0, 2, 0))
    with pytest.raises(ValueError, match="increase along a row"):
        impulse.solve_qp_batch(P, q, (np.ones((1, 2)), np.array([0, 2, 2]), np.array([1, 0])), b, cones=(0, 2, 0))
    with pytest.raises(ValueError, match="row_ptr: expected 3 entries"):
        impulse.solve_qp_batch(P, q, (np.ones((1, 2)), np.array([0, 2]), np.array([0, 1])), b, cones=(0, 2, 0))
    with pytest.raises(ValueError, match="values: expected shape"):
        impulse.solve_qp_batch(P, q, (np.ones((1, 3)), np.array([0, 1, 2]), np.array([0, 1])), b, cones=(0, 2, 0))
