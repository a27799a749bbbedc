// impulse's Python extension, the learning half: toss data, training runs and
// their evaluation (python/impulse/learning.py documents and checks the options).
// Runs and their files are the CLI's own: the same run directories (lock,
// checkpoint and resume, log.txt, params.json), the same metrics.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/dynamics/multibody.h"
#include "host/dynamics/simulate.h"
#include "host/systems/system_file.h"
#include "host/learning/ccn.h"
#include "host/learning/contactnets_loss.h"
#include "host/learning/contactnets_model.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "io/system_tosses.h"
#include "io/toss_data.h"
#include "host/batch/parallel.h"
#include "solvers/error.h"

namespace nb = nanobind;

namespace {

// a NumPy array (rows, cols) that owns a copy of `values`
nb::ndarray<nb::numpy, double> rows_array(const double* values, size_t rows, size_t cols) {
  auto* owned = new std::vector<double>(values, values + rows * cols);
  if (owned->empty()) owned->resize(1);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const size_t shape[2] = {rows, cols};
  return nb::ndarray<nb::numpy, double>(owned->data(), 2, shape, owner);
}

// Cube tosses (ContactNets, CCN, impulse formats): io/toss_data.h's load_tosses.
nb::dict load_cube_tosses(const std::string& path, double dt) {
  impulse::TossSet set;
  {
    nb::gil_scoped_release release;
    set = impulse::load_tosses(path, dt);
  }
  nb::dict r;
  r["format"] = set.format;
  r["width"] = 13;
  r["dt"] = set.meta.dt;
  nb::dict meta;
  meta["dt"] = set.meta.dt;
  meta["mass"] = set.meta.mass;
  meta["inertia"] = nb::make_tuple(set.meta.inertia[0], set.meta.inertia[1], set.meta.inertia[2]);
  meta["gravity"] = set.meta.gravity;
  meta["half_width"] = set.meta.half_width;
  meta["mu"] = set.meta.mu;
  meta["restitution"] = set.meta.restitution;
  r["meta"] = meta;
  nb::list names, states;
  for (const impulse::Toss& t : set.tosses) {
    names.append(t.name);
    states.append(rows_array(t.states.empty() ? nullptr : t.states.front().data(), t.states.size(), 13));
  }
  r["names"] = names;
  r["states"] = states;
  return r;
}

// A system by name or file (host/systems/system_file.h) as a dict: name, gravity, friction,
// width and per link its name, parent (-1 for the base), joint origin and axis, mass, COM,
// inertia about the COM (3 x 3) and contact vertices (k x 3).
nb::dict load_system_description(const std::string& name_or_path) {
  const impulse::MultibodySystem sys = impulse::load_system(name_or_path);
  nb::dict d;
  d["name"] = sys.name;
  d["gravity"] = sys.gravity;
  d["friction"] = sys.mu;
  d["width"] = sys.width();
  nb::list links;
  for (const impulse::LinkSpec& l : sys.links) {
    nb::dict k;
    k["name"] = l.name;
    k["parent"] = l.parent;
    k["joint_origin"] = nb::make_tuple(l.joint_origin.x(), l.joint_origin.y(), l.joint_origin.z());
    k["axis"] = nb::make_tuple(l.axis.x(), l.axis.y(), l.axis.z());
    k["mass"] = l.inertia.mass;
    k["com"] = nb::make_tuple(l.inertia.com.x(), l.inertia.com.y(), l.inertia.com.z());
    nb::list I, V;
    for (int r = 0; r < 3; ++r)
      I.append(nb::make_tuple(l.inertia.inertia_com(r, 0), l.inertia.inertia_com(r, 1), l.inertia.inertia_com(r, 2)));
    for (const Eigen::Vector3d& v : l.vertices) V.append(nb::make_tuple(v.x(), v.y(), v.z()));
    k["inertia"] = I;
    k["vertices"] = V;
    links.append(k);
  }
  d["links"] = links;
  // the data files' layout (a description's "state"; docs/systems.md)
  const impulse::StateLayout& L = sys.layout;
  nb::dict st;
  st["rotation"] = L.rotation_name();
  st["angular_velocity"] = L.world_angular_velocity ? "world" : "body";
  nb::list joints;
  for (int j = 0; j < sys.joints(); ++j)
    joints.append(sys.links[static_cast<size_t>((L.joints.empty() ? j : L.joints[static_cast<size_t>(j)]) + 1)].name);
  st["joints"] = joints;
  d["state"] = st;
  return d;
}

// Multibody tosses of a named system (io/system_tosses.h), of that system's width.
nb::dict load_system_tosses(const std::string& path, const std::string& system, double dt) {
  const impulse::MultibodySystem sys = impulse::load_system(system);
  impulse::SystemTossSet set;
  {
    nb::gil_scoped_release release;
    set = impulse::load_system_tosses(path, sys.width(), dt, sys.layout);
  }
  nb::dict r;
  r["format"] = set.format;
  r["width"] = set.width;
  r["dt"] = set.dt;
  r["system"] = system;
  nb::list names, states;
  for (const impulse::SystemToss& t : set.tosses) {
    names.append(t.name);
    states.append(rows_array(t.rows.data(), size_t(t.steps(set.width)), size_t(set.width)));
  }
  r["names"] = names;
  r["states"] = states;
  return r;
}

template <class T>
T option(const nlohmann::json& j, const char* key, const char* type) {
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw impulse::Error(std::string(key) + ": expected " + type + ", got " + j.at(key).dump());
  }
}

// A TrainConfig from the options given (a JSON object of the Python keywords): the
// defaults are TrainConfig's (the CLI's), an unknown option is an Error naming it,
// and the whole is checked as the CLI checks it (validate_train_config).
impulse::TrainConfig train_config(const std::string& options_json) {
  const nlohmann::json j = nlohmann::json::parse(options_json);
  impulse::TrainConfig c;
  for (const auto& kv : j.items()) {
    const std::string& k = kv.key();
    if (k == "method") c.method = option<std::string>(j, "method", "a string");
    else if (k == "data") c.data = option<std::string>(j, "data", "a path");
    else if (k == "dt") c.dt = option<double>(j, "dt", "a number");
    else if (k == "out") c.out = option<std::string>(j, "out", "a path");
    else if (k == "tosses") c.tosses = option<int>(j, "tosses", "a count");
    else if (k == "seed") c.seed = option<uint64_t>(j, "seed", "an integer >= 0");
    else if (k == "max_epochs") c.max_epochs = option<int>(j, "max_epochs", "an integer");
    else if (k == "patience") c.patience = option<int>(j, "patience", "an integer");
    else if (k == "batch_size") c.batch_size = option<int>(j, "batch_size", "an integer");
    else if (k == "lr") c.lr = option<double>(j, "lr", "a number");
    else if (k == "weight_decay") c.weight_decay = option<double>(j, "weight_decay", "a number");
    else if (k == "init_noise") c.init_noise = option<double>(j, "init_noise", "a number");
    else if (k == "friction") c.friction = option<std::string>(j, "friction", "a string");
    else if (k == "eps") c.eps = option<double>(j, "eps", "a number");
    else if (k == "threads") c.threads = option<int>(j, "threads", "an integer");
    else if (k == "backend") c.backend = option<std::string>(j, "backend", "a string");
    else if (k == "layout") c.layout = option<std::string>(j, "layout", "a string");
    else if (k == "max_seconds") c.max_seconds = option<double>(j, "max_seconds", "a number");
    else if (k == "progress") c.progress = option<bool>(j, "progress", "True or False");
    else if (k == "system") c.system = option<std::string>(j, "system", "a system name or a .json / .urdf file");
    else if (k == "w_res") c.w_res = option<double>(j, "w_res", "a number");
    else if (k == "w_res_w") c.w_res_w = option<double>(j, "w_res_w", "a number");
    else if (k == "residual_layers") c.residual_layers = option<int>(j, "residual_layers", "an integer");
    else if (k == "residual_width") c.residual_width = option<int>(j, "residual_width", "an integer");
    else if (k == "known") c.known = option<std::string>(j, "known", "a comma list");
    else if (k == "smooth_velocities") c.smooth_velocities = option<int>(j, "smooth_velocities", "an integer");
    else if (k == "select") c.select = option<std::string>(j, "select", "'loss' or 'rollout'");
    else throw impulse::Error("unknown option '" + k + "'");
  }
  if (c.data.empty()) throw impulse::Error("data: the tosses to learn from are required (a path)");
  if (c.out.empty()) throw impulse::Error("out: the run directory is required (a path)");
  impulse::validate_train_config(c);
  return c;
}

// Trains (or resumes) the run; log lines go to stdout (verbose) and RUN_DIR/log.txt.
std::string train(const std::string& options_json, bool verbose) {
  const impulse::TrainConfig c = train_config(options_json);
  impulse::TrainResult r;
  {
    nb::gil_scoped_release release;
    std::ostringstream quiet;
    r = impulse::train(c, verbose ? std::cout : static_cast<std::ostream&>(quiet));
    std::cout.flush();
  }
  nlohmann::json out;
  out["best_epoch"] = r.best_epoch;
  out["best_valid"] = r.best_valid;
  out["early_stopped"] = r.early_stopped;
  out["resumed"] = r.resumed;
  out["out"] = c.out;
  nlohmann::json hist = nlohmann::json::array();
  for (const impulse::EpochRecord& e : r.history) {
    nlohmann::json h = {{"epoch", e.epoch},         {"train_loss", e.train_loss},
                        {"valid_loss", e.valid_loss}, {"seconds", e.seconds},
                        {"train_seconds", e.train_seconds}, {"mean_qp_iterations", e.mean_qp_iterations},
                        {"not_solved", e.not_solved}};
    if (std::isfinite(e.valid_rollout_m)) h["valid_rollout_m"] = e.valid_rollout_m;
    hist.push_back(h);
  }
  out["history"] = hist;
  return out.dump();
}

std::string evaluate(const std::string& run, const std::string& data, const std::string& tosses,
                     const std::string& params, int threads, double dt) {
  impulse::EvalOptions o;
  o.dt = dt;
  o.run_dir = run;
  o.data = data;
  o.tosses = tosses;
  o.params = params;
  o.threads = threads;
  nlohmann::json m;
  {
    nb::gil_scoped_release release;
    m = impulse::evaluate_run(o);
  }
  return m.dump();
}

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

// the loss QPs' settings and the batch options of the losses below
impulse::QpSettings<double> loss_settings(double eps, bool check_psd) {
  if (!(eps > 0)) throw impulse::Error("eps: expected a positive tolerance");
  impulse::QpSettings<double> st;
  st.eps_abs = st.eps_rel = eps;
  st.check_psd = check_psd;
  return st;
}
impulse::BatchOptions loss_options(int threads) {
  impulse::resolve_threads(threads);  // (an Error naming a count out of range)
  impulse::BatchOptions o;
  o.threads = threads;
  return o;
}
using Grad = nb::ndarray<double, nb::c_contig, nb::device::cpu>;

void expect(size_t got, size_t want, const std::string& name) {
  if (got != want)
    throw impulse::Error(name + ": expected " + std::to_string(want) + " numbers, got " + std::to_string(got));
}

impulse::TossMeta meta_of(const nb::dict& d) {
  impulse::TossMeta m;
  auto num = [&](const char* k, double& v) {
    if (d.contains(k)) v = nb::cast<double>(d[k]);
  };
  num("dt", m.dt);
  num("mass", m.mass);
  num("gravity", m.gravity);
  num("half_width", m.half_width);
  num("mu", m.mu);
  num("restitution", m.restitution);
  if (d.contains("inertia")) {
    const nb::sequence in = nb::cast<nb::sequence>(d["inertia"]);
    if (nb::len(in) != 3) throw impulse::Error("meta inertia: expected the 3 principal moments (kg m^2)");
    for (size_t i = 0; i < 3; ++i) m.inertia[i] = nb::cast<double>(in[i]);
  }
  for (double v : {m.dt, m.mass, m.gravity, m.half_width, m.inertia[0], m.inertia[1], m.inertia[2]})
    if (!(v > 0) || !std::isfinite(v))
      throw impulse::Error("meta: dt, mass, gravity, half_width and the inertia must be positive and finite");
  return m;
}

// ContactNets' loss (host/learning/contactnets_loss.h) of the Polytope model with
// parameters θ (57, SI), per transition, and its gradient in θ per transition.
class ContactNetsCore {
 public:
  ContactNetsCore(const nb::dict& meta, const std::string& friction, double eps, int threads)
      : meta_(meta_of(meta)), model_(impulse::PolytopeParams::cube(meta_.half_width, meta_.mu)),
        // the loss QP's P is PSD by construction: no factorization to test it (as in training)
        loss_(config(meta_, friction), loss_settings(eps, false), loss_options(threads)) {}

  static std::vector<double> cube(const nb::dict& meta) { return impulse::true_polytope_parameters(meta_of(meta)); }

  nb::dict evaluate(const In<double>& theta, const In<double>& x, const In<double>& xn, nb::object grad_out) {
    expect(theta.size(), size_t(impulse::PolytopeParams::kSize), "theta (the Polytope's parameters)");
    if (x.size() % 13 != 0 || x.size() != xn.size() || x.size() == 0)
      throw impulse::Error("x, x_next: expected (B, 13) each, B >= 1, the same B");
    const int B = int(x.size() / 13);
    for (size_t i = 0; i < theta.size(); ++i)
      if (!std::isfinite(theta.data()[i])) throw impulse::Error("theta: entry " + std::to_string(i) + " is not finite");
    Grad grad;
    if (!grad_out.is_none()) {
      grad = nb::cast<Grad>(grad_out);
      expect(grad.size(), size_t(B) * impulse::PolytopeParams::kSize, "the gradient's storage (B, 57)");
    }
    impulse::LossBatchResult r;
    {
      nb::gil_scoped_release release;
      model_.set_parameters(std::vector<double>(theta.data(), theta.data() + theta.size()));
      frames_.resize(B);
      for (int i = 0; i < B; ++i) {
        frames_[i].x = Eigen::Map<const impulse::State>(x.data() + size_t(i) * 13);
        frames_[i].x_next = Eigen::Map<const impulse::State>(xn.data() + size_t(i) * 13);
        if (!frames_[i].x.allFinite() || !frames_[i].x_next.allFinite())
          throw impulse::Error("x, x_next: transition " + std::to_string(i) + " has a non-finite entry");
      }
      model_.frames(frames_, loss_.options().threads);
      loss_.evaluate(frames_, grad.is_valid(), r);
      if (grad.is_valid()) {
        const int K = impulse::PolytopeParams::kSize;
        std::fill(grad.data(), grad.data() + size_t(B) * K, 0.0);
        for (int i = 0; i < B; ++i)
          model_.backprop(frames_[i].x, frames_[i].x_next, r.grad[i], grad.data() + size_t(i) * K);
      }
    }
    nb::dict d;
    nb::list qp, reg;
    for (int i = 0; i < B; ++i) qp.append(r.qp_loss[i]), reg.append(r.reg_loss[i]);
    d["qp_loss"] = qp;
    d["reg_loss"] = reg;
    d["not_solved"] = r.not_solved;
    d["iterations"] = r.iterations;
    return d;
  }

 private:
  static impulse::ContactNetsLossConfig config(const impulse::TossMeta& meta, const std::string& friction) {
    if (friction != "cone" && friction != "octagon")
      throw impulse::Error("friction: expected 'cone' or 'octagon', got '" + friction + "'");
    impulse::ContactNetsLossConfig lc;  // as the trainer makes it (host/learning/trainer.cc)
    lc.friction = friction == "octagon" ? impulse::FrictionModel::kOctagon : impulse::FrictionModel::kCone;
    lc.length_unit = meta.half_width;
    lc.dt = meta.dt;
    lc.body = impulse::body_from_meta(meta);
    return lc;
  }
  impulse::TossMeta meta_;
  impulse::PolytopeContactModel model_;
  impulse::ContactNetsLoss loss_;
  std::vector<impulse::TransitionFrame> frames_;
};

// CCN's loss (host/learning/ccn.h) of a named system's model with parameters θ
// (geometry, inertia, μ: net_offset() numbers) per transition, the residual δ
// given (nv per transition) or none; gradients in θ and δ per transition.
class CcnCore {
 public:
  CcnCore(const std::string& system, double dt, double eps, int threads, const nb::dict& weights)
      : model_(impulse::load_system(system), false),
        loss_(config(dt, weights), loss_settings(eps, true), loss_options(threads)) {}

  int parameter_count() const { return model_.parameter_count(); }
  int nv() const { return model_.system().nv(); }
  int width() const { return model_.system().width(); }
  std::vector<double> nominal() const {
    const Eigen::VectorXd t = impulse::CcnModel(model_.system(), false).parameters();
    return std::vector<double>(t.data(), t.data() + t.size());
  }
  std::vector<double> random(uint64_t seed) const {
    impulse::CcnModel m(model_.system(), false);
    m.randomize(seed);
    const Eigen::VectorXd t = m.parameters();
    return std::vector<double>(t.data(), t.data() + t.size());
  }

  nb::dict evaluate(const In<double>& theta, const In<double>& x, const In<double>& xn, nb::object residual,
                    nb::object grad_theta, nb::object grad_delta) {
    const size_t K = size_t(model_.parameter_count()), W = size_t(width()), V = size_t(nv());
    expect(theta.size(), K, "theta (the model's parameters)");
    if (x.size() % W != 0 || x.size() != xn.size() || x.size() == 0)
      throw impulse::Error("x, x_next: expected (B, " + std::to_string(W) + ") each (the system's state width), "
                           "B >= 1, the same B");
    const int B = int(x.size() / W);
    In<double> res;
    if (!residual.is_none()) {
      res = nb::cast<In<double>>(residual);
      expect(res.size(), size_t(B) * V, "residual (B, nv)");
    }
    Grad gt, gd;
    if (!grad_theta.is_none()) {
      gt = nb::cast<Grad>(grad_theta);
      gd = nb::cast<Grad>(grad_delta);
      expect(gt.size(), size_t(B) * K, "the gradient's storage (B, parameters)");
      expect(gd.size(), size_t(B) * V, "the residual gradient's storage (B, nv)");
    }
    impulse::CcnLossEach each;
    {
      nb::gil_scoped_release release;
      model_.set_parameters(Eigen::Map<const Eigen::VectorXd>(theta.data(), Eigen::Index(K)));
      batch_.resize(B);
      for (int i = 0; i < B; ++i) {
        batch_[i].x = Eigen::Map<const Eigen::VectorXd>(x.data() + size_t(i) * W, Eigen::Index(W));
        batch_[i].x_next = Eigen::Map<const Eigen::VectorXd>(xn.data() + size_t(i) * W, Eigen::Index(W));
      }
      Eigen::MatrixXd D;
      if (res.is_valid()) D = Eigen::Map<const Eigen::MatrixXd>(res.data(), Eigen::Index(V), B);  // (B, nv) row-major
      loss_.evaluate_each(model_, batch_, res.is_valid() ? &D : nullptr, each);
      if (gt.is_valid()) {
        std::copy(each.grad_theta.begin(), each.grad_theta.end(), gt.data());
        Eigen::Map<Eigen::MatrixXd>(gd.data(), Eigen::Index(V), B) = each.grad_delta;
      }
    }
    nb::dict d;
    nb::list loss;
    for (double v : each.loss) loss.append(v);
    d["loss"] = loss;
    d["not_solved"] = each.not_solved;
    d["iterations"] = each.iterations;
    return d;
  }

 private:
  static impulse::CcnLossConfig config(double dt, const nb::dict& w) {
    if (!(dt > 0)) throw impulse::Error("dt: expected a positive time step (s)");
    impulse::CcnLossConfig c;
    c.dt = dt;
    for (auto kv : w) {
      const std::string k = nb::cast<std::string>(kv.first);
      const double v = nb::cast<double>(kv.second);
      if (!(v >= 0) || !std::isfinite(v)) throw impulse::Error("weights: " + k + " must be finite and >= 0");
      if (k == "comp") c.weights.comp = v;
      else if (k == "diss") c.weights.diss = v;
      else if (k == "pen") c.weights.pen = v;
      else if (k == "res") c.weights.res = v;
      else throw impulse::Error("weights: unknown weight '" + k + "' (comp, diss, pen, res)");
    }
    return c;
  }
  impulse::CcnModel model_;
  impulse::CcnLoss loss_;
  std::vector<impulse::CcnTransition> batch_;
};

}  // namespace

void bind_learning(nb::module_& m) {
  nb::class_<ContactNetsCore>(m, "ContactNetsCore")
      .def(nb::init<const nb::dict&, const std::string&, double, int>(), nb::arg("meta"), nb::arg("friction"),
           nb::arg("eps"), nb::arg("threads"))
      .def_static("cube", &ContactNetsCore::cube, nb::arg("meta"))
      .def("evaluate", &ContactNetsCore::evaluate, nb::arg("theta").noconvert(), nb::arg("x").noconvert(),
           nb::arg("x_next").noconvert(), nb::arg("grad").none());
  nb::class_<CcnCore>(m, "CcnCore")
      .def(nb::init<const std::string&, double, double, int, const nb::dict&>(), nb::arg("system"), nb::arg("dt"),
           nb::arg("eps"), nb::arg("threads"), nb::arg("weights"))
      .def_prop_ro("parameter_count", &CcnCore::parameter_count)
      .def_prop_ro("nv", &CcnCore::nv)
      .def_prop_ro("width", &CcnCore::width)
      .def("nominal", &CcnCore::nominal)
      .def("random", &CcnCore::random, nb::arg("seed"))
      .def("evaluate", &CcnCore::evaluate, nb::arg("theta").noconvert(), nb::arg("x").noconvert(),
           nb::arg("x_next").noconvert(), nb::arg("residual").none(), nb::arg("grad_theta").none(),
           nb::arg("grad_delta").none());
  m.def("load_cube_tosses", &load_cube_tosses, nb::arg("path"), nb::arg("dt"));
  m.def("load_system_tosses", &load_system_tosses, nb::arg("path"), nb::arg("system"), nb::arg("dt"));
  m.def("load_system", &load_system_description, nb::arg("name_or_path"));
  m.def("train", &train, nb::arg("options_json"), nb::arg("verbose"));
  m.def("evaluate", &evaluate, nb::arg("run"), nb::arg("data"), nb::arg("tosses"), nb::arg("params"),
        nb::arg("threads"), nb::arg("dt"));
}
