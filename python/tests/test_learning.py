"""impulse.load_tosses, impulse.train, impulse.evaluate: the CLI's data, runs and metrics
from Python. A run trained here equals the CLI's (params.json byte for byte), resumes as
the CLI's does, and evaluates to the CLI's metrics; bad options and files are named."""
import json
import os
import subprocess

import numpy as np
import pytest

import impulse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "data", "synthetic_cube.npz")
SMALL = dict(tosses=4, epochs=2, seed=3, threads=1, progress=False)


def cli():
    from test_solve import cli as find
    return find()


def test_load_tosses_reads_the_builtin_data_set():
    t = impulse.load_tosses(DATA)
    assert t.format == "impulse" and len(t) == 100 and t.rows == 11370 and t.width == 13
    assert t.meta["half_width"] == pytest.approx(0.0524) and t.meta["mu"] == pytest.approx(0.18)
    assert t.dt == pytest.approx(1 / 148)
    z = np.load(DATA)
    off = z["offsets"]
    np.testing.assert_array_equal(t[3], z["states"][off[3]:off[4]])  # the file's rows, as stored
    q = t[0][:, 3:7]
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)


def test_load_tosses_names_a_bad_file(tmp_path):
    bad = tmp_path / "tosses.npz"
    bad.write_bytes(open(DATA, "rb").read()[:5000])  # truncated
    with pytest.raises(ValueError, match="tosses.npz"):
        impulse.load_tosses(bad)
    with pytest.raises(ValueError, match="missing|exist|no such|not found"):
        impulse.load_tosses(tmp_path / "absent.npz")
    with pytest.raises(ValueError, match="system"):
        impulse.load_tosses(DATA, system="pendulum")


def test_multibody_tosses_load_for_their_system(tmp_path):
    exe = cli()
    if exe is None:
        pytest.skip("no impulse CLI built (build/impulse; or set IMPULSE_CLI)")
    f = tmp_path / "elbow.npz"
    subprocess.run([exe, "generate-tosses", "--system", "elbow", "--count", "3", "--states", "60", "--out", str(f)],
                   check=True, capture_output=True)
    t = impulse.load_tosses(f, system="elbow")
    assert t.format == "impulse-multibody" and len(t) == 3 and t.width == 15 and t.meta is None
    assert all(s.shape == (60, 15) for s in t.states)
    with pytest.raises(ValueError, match="15"):
        impulse.load_tosses(f, system="cube")  # 13 columns expected, 15 found


def test_a_given_time_step_replaces_the_datas_and_a_run_keeps_it(tmp_path):
    t = impulse.load_tosses(DATA, dt=0.0069)
    assert t.dt == 0.0069 and t.meta["dt"] == 0.0069
    np.testing.assert_array_equal(t[0], impulse.load_tosses(DATA)[0])  # the states as stored
    with pytest.raises(ValueError, match="dt"):
        impulse.load_tosses(DATA, dt=-1)
    with pytest.raises(ValueError, match="dt"):
        impulse.load_tosses(DATA, dt="fast")
    run = tmp_path / "run"
    impulse.train(data=DATA, out=run, verbose=False, dt=0.0069, **SMALL)
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["dt"] == 0.0069
    # eval rolls out with the run's dt, unless given another: the metrics differ
    own = impulse.evaluate(run, threads=1)
    other = impulse.evaluate(run, threads=1, dt=1 / 148)
    assert own["position_error_m"] != other["position_error_m"]
    with pytest.raises(ValueError, match="dt"):
        impulse.train(data=DATA, out=tmp_path / "bad", dt=2.0, **SMALL)


def test_options_are_typed_and_checked_as_the_clis(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="unknown option 'max_epochs'"):
        impulse.train(data=DATA, out=out, max_epochs=3)
    with pytest.raises(ValueError, match="epochs: expected int"):
        impulse.train(data=DATA, out=out, epochs="3")
    with pytest.raises(ValueError, match="friction"):
        impulse.train(data=DATA, out=out, friction="pyramid", **SMALL)
    with pytest.raises(ValueError, match="batch"):
        impulse.train(data=DATA, out=out, batch=0, **SMALL)
    assert not out.exists()  # nothing written for options refused


def test_a_run_trained_here_is_the_clis_and_resumes(tmp_path):
    exe = cli()
    py = tmp_path / "py"
    r = impulse.train(data=DATA, out=py, verbose=False, **SMALL)
    assert [h["epoch"] for h in r["history"]] == [0, 1, 2] and not r["resumed"]  # epoch 0: the start
    assert all(np.isfinite(h["train_loss"]) and np.isfinite(h["valid_loss"]) for h in r["history"])
    assert (py / "params.json").exists() and (py / "log.txt").exists()
    # again, with more epochs: it resumes from the checkpoint
    r2 = impulse.train(data=DATA, out=py, verbose=False, **{**SMALL, "epochs": 3})
    assert r2["resumed"] and [h["epoch"] for h in r2["history"]] == [0, 1, 2, 3]
    if exe is None:
        pytest.skip("no impulse CLI built to compare with (build/impulse; or set IMPULSE_CLI)")
    cl = tmp_path / "cli"
    subprocess.run([exe, "train", "--data", DATA, "--out", str(cl), "--tosses", "4", "--epochs", "3", "--seed",
                    "3", "--threads", "1"], check=True, capture_output=True)
    assert (cl / "params.json").read_bytes() == (py / "params.json").read_bytes()
    # evaluation: the same metrics as the CLI's eval of the same run
    m = impulse.evaluate(py, threads=1)
    subprocess.run([exe, "eval", "--run", str(py), "--threads", "1", "--out", str(tmp_path / "m.json")],
                   check=True, capture_output=True)
    assert m == json.loads((tmp_path / "m.json").read_text())
    assert np.isfinite(m["position_error_m"]) and m["n_tosses"] > 0
    some = impulse.evaluate(py, subset=[0, 5], threads=1)
    assert some["n_tosses"] == 2
    with pytest.raises(ValueError, match="subset"):
        impulse.evaluate(py, subset=[0.5j])


# ---- systems as files (docs/systems.md) --------------------------------------------------
def test_load_system_reads_the_builtins_files_and_urdfs_as_the_cli_does(tmp_path):
    for name in ("cube", "asymmetric", "elbow"):
        by_name = impulse.load_system(name)
        by_file = impulse.load_system(os.path.join(ROOT, "data", "systems", name + ".json"))
        assert by_name["name"] == by_file["name"] == name
        assert by_name["width"] == by_file["width"]
        for a, b in zip(by_name["links"], by_file["links"]):
            for key in ("joint_origin", "axis", "com", "inertia", "vertices"):
                assert np.array_equal(a[key], b[key]), (name, key)
            assert a["mass"] == b["mass"] and a["parent"] == b["parent"]
    chain = impulse.load_system(os.path.join(ROOT, "tests", "data", "systems", "chain3.urdf"))
    assert chain["width"] == 13 + 2 * 2 and [k["name"] for k in chain["links"]] == ["base", "middle", "tip"]
    assert chain["links"][0]["vertices"].shape == (16, 3)  # the fixed handle's box merged into the base
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "impulse-system-1", "links": [{"name": "b", "mass": 1, "box": {"size": [1, 1, 1]}}]}')
    with pytest.raises(ValueError, match=r"bad\.json: link 'b': no inertia"):
        impulse.load_system(bad)
    with pytest.raises(ValueError, match="unknown system 'pendulum'"):
        impulse.load_system("pendulum")


def test_a_mesh_collision_and_a_stated_layout_load_as_the_cli_reads_them(tmp_path):
    wedge = impulse.load_system(os.path.join(ROOT, "tests", "data", "systems", "wedge.urdf"))
    # the STL's 7 points, one on the bottom face: the hull's 6 vertices (assimp reads floats)
    want = np.array([[0, 0, 0], [0.08, 0, 0], [0, 0.05, 0], [0.01, 0.01, 0.04], [0.06, 0.005, 0.035],
                     [0.005, 0.045, 0.03]])
    got = wedge["links"][0]["vertices"]
    assert got.shape == (6, 3)
    assert max(np.min(np.linalg.norm(got - w, axis=1)) for w in want) < 2e-8
    # the chain with its data as rotation matrices, world-axes ω and the joints as (tip, middle)
    desc = json.loads(open(os.path.join(ROOT, "tests", "data", "systems", "chain3.json")).read())
    desc["state"] = {"rotation": "matrix", "angular_velocity": "world", "joints": ["tip", "middle"]}
    stated = tmp_path / "chain3_matrix.json"
    stated.write_text(json.dumps(desc))
    s = impulse.load_system(stated)
    assert s["state"] == {"rotation": "matrix", "angular_velocity": "world", "joints": ["tip", "middle"]}
    assert impulse.load_system("elbow")["state"]["rotation"] == "quaternion_wxyz"
    # model rows: a base turning about a tilted axis, joints and rates distinct
    rows = []
    for k in range(5):
        a = 0.2 + 0.5 * k
        q = [np.cos(a), 0.6 * np.sin(a), 0.0, 0.8 * np.sin(a)]
        rows.append(q + [0.01 * k, 0.02, 0.3, 0.4 - 0.1 * k, -0.6, 1.0 + k, 2.0, -3.0, 4.0, 5.0 - k, 6.0, -2.5, 1.5 + k])
    model = np.array(rows)
    foreign = []
    for r in model:
        w, x, y, z = r[:4]
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        foreign.append(np.concatenate([R.ravel(), r[4:7], r[[8, 7]], R @ r[9:12], r[12:15], r[[16, 15]]]))
    path = tmp_path / "recorded.npz"
    np.savez(path, states=np.array(foreign), offsets=np.array([0, 5], dtype=np.int64), dt=np.array([0.01]))
    t = impulse.load_tosses(path, stated)
    assert t.width == 17
    np.testing.assert_allclose(t.states[0], model, rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match=r"has 17 columns, expected 22 .*rotation matrix"):
        impulse.load_tosses(_write_model(tmp_path, model), stated)


def _write_model(tmp_path, model):
    p = tmp_path / "model.npz"
    np.savez(p, states=model, offsets=np.array([0, len(model)], dtype=np.int64), dt=np.array([0.01]))
    return p


def test_tosses_load_for_a_system_from_its_file():
    elbow = os.path.join(ROOT, "data", "systems", "elbow.json")
    c = cli()
    if c is None:
        pytest.skip("the CLI is not built (IMPULSE_CLI) to make the tosses")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.npz")
        subprocess.run([c, "generate-tosses", "--system", elbow, "--count", "3", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        by_file = impulse.load_tosses(out, elbow)
        by_name = impulse.load_tosses(out, "elbow")
        assert len(by_file) == 3 and by_file.width == 15
        for a, b in zip(by_file.states, by_name.states):
            assert np.array_equal(a, b)
