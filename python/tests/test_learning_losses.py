"""impulse.torch.ContactNetsLoss and impulse.torch.CcnLoss: the learning losses as torch
functions. Gradients in the parameters (and in CCN's residual) against central
differences of the loss itself; the residual of a torch module trains through them."""
import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")
import impulse  # noqa: E402
import impulse.torch as it  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "data", "synthetic_cube.npz")


def transitions(tosses, count, step=3):
    x, xn = [], []
    for s in tosses.states:
        for k in range(0, s.shape[0] - 1, step):
            x.append(s[k])
            xn.append(s[k + 1])
    x, xn = np.array(x), np.array(xn)
    pick = np.linspace(0, len(x) - 1, count).astype(int)
    return torch.from_numpy(x[pick]), torch.from_numpy(xn[pick])


def directional_check(f, theta, grad, directions, h, rtol):
    for d in directions:
        fd = (f(theta + h * d) - f(theta - h * d)) / (2 * h)
        want = float(grad @ d)
        assert abs(want - fd) <= rtol * (abs(fd) + 1e-3), (want, fd)


def test_contactnets_loss_gradient_matches_central_differences():
    t = impulse.load_tosses(DATA)
    x, xn = transitions(t, 24)
    loss = it.ContactNetsLoss(t.meta, eps=1e-10)
    truth = loss.cube_parameters()
    g = torch.Generator().manual_seed(1)
    theta = (truth * (1 + 0.2 * torch.randn(57, generator=g, dtype=torch.float64))).requires_grad_(True)
    L = loss(theta, x, xn)
    assert L.shape == (24,) and torch.isfinite(L).all() and loss.last["not_solved"] == 0
    w = torch.rand(24, generator=g, dtype=torch.float64)
    (w * L).sum().backward()
    f = lambda th: float((w * loss(th, x, xn)).sum())  # noqa: E731
    dirs = [torch.randn(57, generator=g, dtype=torch.float64) * truth.abs().clamp(min=0.01) for _ in range(4)]
    directional_check(f, theta.detach(), theta.grad, dirs, 1e-6, 1e-4)
    # the true cube explains its own noise-free tosses better than a perturbed one
    assert float(loss(truth, x, xn).sum()) < float(L.detach().sum())


def test_contactnets_loss_names_bad_input():
    t = impulse.load_tosses(DATA)
    x, xn = transitions(t, 4)
    loss = it.ContactNetsLoss(t.meta)
    th = loss.cube_parameters()
    with pytest.raises(ValueError, match="theta"):
        loss(th[:50], x, xn)
    with pytest.raises(ValueError, match="x_next"):
        loss(th, x, xn[:3])
    with pytest.raises(ValueError, match=r"x: expected \(B, 13\)"):
        loss(th, x[:, :12], xn)
    bad = x.clone()
    bad[2, 0] = float("nan")
    with pytest.raises(ValueError, match="transition 2"):
        loss(th, bad, xn)
    with pytest.raises(ValueError, match="friction"):
        it.ContactNetsLoss(t.meta, friction="pyramid")


@pytest.fixture(scope="module")
def elbow(tmp_path_factory):
    from test_solve import cli
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built to generate elbow tosses (build/impulse; or set IMPULSE_CLI)")
    f = tmp_path_factory.mktemp("elbow") / "elbow.npz"
    subprocess.run([exe, "generate-tosses", "--system", "elbow", "--count", "4", "--states", "60", "--seed", "2",
                    "--out", str(f)], check=True, capture_output=True)
    return impulse.load_tosses(f, system="elbow")


def test_ccn_loss_gradients_in_theta_and_residual_match_central_differences(elbow):
    x, xn = transitions(elbow, 16, step=2)
    loss = it.CcnLoss("elbow", dt=elbow.dt, eps=1e-10)
    assert loss.width == 15 and loss.nv == 7
    theta = loss.random_parameters(seed=4).requires_grad_(True)
    g = torch.Generator().manual_seed(5)
    delta = (0.5 * torch.randn(16, loss.nv, generator=g, dtype=torch.float64)).requires_grad_(True)
    L = loss(theta, x, xn, residual=delta)
    assert L.shape == (16,) and loss.last["not_solved"] == 0
    w = torch.rand(16, generator=g, dtype=torch.float64)
    (w * L).sum().backward()
    f = lambda th: float((w * loss(th, x, xn, residual=delta.detach())).sum())  # noqa: E731
    dirs = [torch.randn(loss.parameter_count, generator=g, dtype=torch.float64) * 0.01 for _ in range(4)]
    directional_check(f, theta.detach(), theta.grad, dirs, 1e-6, 1e-4)
    fr = lambda d: float((w * loss(theta.detach(), x, xn, residual=d)).sum())  # noqa: E731
    for k, j in ((0, 0), (3, 5), (15, 6)):
        e = torch.zeros_like(delta)
        e[k, j] = 1
        fd = (fr(delta.detach() + 1e-6 * e) - fr(delta.detach() - 1e-6 * e)) / 2e-6
        assert abs(float(delta.grad[k, j]) - fd) <= 1e-4 * (abs(fd) + 1e-3)
    # no residual is a zero residual
    zero = loss(theta.detach(), x, xn, residual=torch.zeros(16, loss.nv, dtype=torch.float64))
    torch.testing.assert_close(loss(theta.detach(), x, xn), zero, rtol=0, atol=0)


def test_ccn_residual_of_a_torch_module_trains_through_the_loss(elbow):
    x, xn = transitions(elbow, 32, step=2)
    loss = it.CcnLoss("elbow", dt=elbow.dt, weights={"res": 0.001})
    theta = loss.nominal_parameters()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(15, 32), torch.nn.Tanh(), torch.nn.Linear(32, loss.nv)).double()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = None
    for _ in range(15):
        opt.zero_grad()
        L = loss(theta, x, xn, residual=net(x)).mean()
        L.backward()
        opt.step()
        first = float(L) if first is None else first
    assert float(loss(theta, x, xn, residual=net(x)).mean()) < first
    with pytest.raises(ValueError, match="residual"):
        loss(theta, x, xn, residual=torch.zeros(32, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="weights"):
        it.CcnLoss("elbow", weights={"bogus": 1.0})
    with pytest.raises(ValueError, match="pendulum|system"):
        it.CcnLoss("pendulum")


def test_ccn_loss_of_a_system_from_its_file_is_the_builtins():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    by_name = it.CcnLoss("elbow")
    by_file = it.CcnLoss(os.path.join(root, "data", "systems", "elbow.json"))
    assert by_file.parameter_count == by_name.parameter_count
    assert torch.equal(by_file.nominal_parameters(), by_name.nominal_parameters())
