#include "host/learning/multibody_eval.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "host/dynamics/hull.h"
#include "host/dynamics/multibody_sim.h"
#include "host/learning/ccn.h"
#include "host/learning/mlp.h"
#include "host/systems/system_file.h"
#include "io/system_tosses.h"
#include "io/json_file.h"
#include "io/files.h"
#include "solvers/error.h"

namespace impulse {
namespace fs = std::filesystem;

namespace {

// a trained model of a run's params file
struct RunModel {
  std::string method;
  CcnModel model;  // structured methods
  bool end_to_end = false;
  Mlp net;  // End-to-end
  Eigen::VectorXd out_mean, out_std;
};

// label names the params' origin in errors
RunModel model_of(const MultibodySystem& sys, const std::string& method, const nlohmann::json& pj,
                  const std::string& label) {
  RunModel L;
  L.method = pj.value("method", method);
  try {
    if (L.method == "end-to-end") {
      L.end_to_end = true;
      L.net = Mlp::from_json(pj.at("network"));
      const auto m = pj.at("output_mean").get<std::vector<double>>(), s = pj.at("output_std").get<std::vector<double>>();
      L.out_mean = Eigen::Map<const Eigen::VectorXd>(m.data(), Eigen::Index(m.size()));
      L.out_std = Eigen::Map<const Eigen::VectorXd>(s.data(), Eigen::Index(s.size()));
      if (L.out_mean.size() != sys.nv() || L.out_std.size() != sys.nv())
        throw Error("output normalization of the wrong size");
    } else {
      L.model = CcnModel::from_json(pj, sys);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(label + ": " + e.what());
  } catch (const Error& e) {
    throw Error(label + ": " + e.what());
  }
  return L;
}

struct LoadedRun : RunModel {
  TrainConfig cfg;
  MultibodySystem sys;
  TossSplit split;
  SystemTossSet data;
  bool same_data = false;
  bool synthetic = false;
};

LoadedRun load(const EvalOptions& opt) {
  LoadedRun L;
  const std::string cfg_path = (fs::path(opt.run_dir) / "config.json").string();
  const nlohmann::json cj = read_json_file(cfg_path);
  L.cfg = TrainConfig::from_json(cj);
  L.sys = run_system(opt.run_dir, L.cfg.system);
  try {
    L.split.train = cj.at("split").at("train").get<std::vector<int>>();
    L.split.valid = cj.at("split").at("valid").get<std::vector<int>>();
    L.split.test = cj.at("split").at("test").get<std::vector<int>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(cfg_path + ": no toss split (" + e.what() + ")");
  }
  const std::string ppath = (fs::path(opt.run_dir) / opt.params).string();
  static_cast<RunModel&>(L) = model_of(L.sys, L.cfg.method, read_json_file(ppath), ppath);
  const std::string path = opt.data.empty() ? L.cfg.data : opt.data;
  L.same_data = opt.data.empty() || fs::weakly_canonical(opt.data) == fs::weakly_canonical(L.cfg.data);
  L.data = load_system_tosses(path, L.sys.width(), opt.dt > 0 ? opt.dt : L.cfg.dt, L.sys.layout);
  L.synthetic = is_synthetic(L.data, L.sys.layout);
  return L;
}

std::vector<std::vector<Eigen::Vector3d>> true_vertices(const MultibodySystem& sys) {
  std::vector<std::vector<Eigen::Vector3d>> v;
  for (const LinkSpec& l : sys.links) v.push_back(l.vertices);
  return v;
}

// rollouts of the selected tosses from their first rows (row-major n x width each)
// trajectories and, per toss, the row its simulation diverged at (−1: never;
// MultibodyRollout::diverged_at: from there on it holds its last valid state)
struct Rollouts {
  std::vector<MultibodyRollout::Trajectory> tr;
  std::vector<int> diverged_at;
};

Rollouts rollouts(const MultibodySystem& sys, const RunModel& L, const SystemTossSet& data,
                  const std::vector<int>& idx, int threads) {
  const int W = sys.width();
  int T = 0;
  for (int i : idx) T = std::max(T, data.tosses[static_cast<size_t>(i)].steps(W));
  Eigen::MatrixXd X0(W, static_cast<Eigen::Index>(idx.size()));
  for (size_t i = 0; i < idx.size(); ++i)
    X0.col(static_cast<Eigen::Index>(i)) = Eigen::Map<const Eigen::VectorXd>(data.tosses[static_cast<size_t>(idx[i])].rows.data(), W);
  const double dt = data.dt;
  if (L.end_to_end) {
    Rollouts out;
    out.tr.resize(idx.size());
    out.diverged_at.assign(idx.size(), -1);
    CcnModel feat(sys, false);
    parallel_for(static_cast<int>(idx.size()), threads, [&](int, int b, int e) {
      Eigen::VectorXd x, xn(W), f(L.net.input_size());
      for (int i = b; i < e; ++i) {
        MultibodyRollout::Trajectory& tr = out.tr[static_cast<size_t>(i)];
        tr.resize(T, W);
        x = X0.col(i);
        tr.row(0) = x.transpose();
        for (int k = 1; k < T; ++k) {
          if (out.diverged_at[static_cast<size_t>(i)] < 0) {  // else x stays the last valid state
            feat.residual_features(x, f);
            xn.tail(sys.nv()) = L.out_std.cwiseProduct(L.net(f)) + L.out_mean;
            integrate_configuration(sys, x.head(sys.nq()), xn.tail(sys.nv()), dt, xn.head(sys.nq()));
            if (rollout_state_is_valid(sys, xn))
              x = xn;
            else
              out.diverged_at[static_cast<size_t>(i)] = k;
          }
          tr.row(k) = x.transpose();
        }
      }
    });
    return out;
  }
  MultibodyParams p;
  p.pi = L.model.inertial();
  p.vertices = L.model.vertices();
  p.mu = L.model.mu();
  p.gravity = sys.gravity;
  MultibodyStepOptions so;
  so.dt = dt;
  so.batch.threads = threads;
  so.qp.eps_abs = 1e-7;
  so.qp.eps_rel = 1e-7;
  ExternalAcceleration residual = nullptr;
  if (L.model.has_residual()) {
    residual = [&](int, int, const Eigen::VectorXd& x, Eigen::Ref<Eigen::VectorXd> a) {
      Eigen::VectorXd f(L.model.network().input_size());
      L.model.residual_features(x, f);
      a = L.model.network()(f);
    };
  }
  MultibodyRollout r = multibody_rollout(sys, p, so, X0, T, residual);
  return {std::move(r.trajectories), std::move(r.diverged_at)};
}

struct TossErrors {
  double position = 0, rotation_deg = 0, penetration = 0;
  std::vector<double> pos_k, rot_k, pen_k;  // per step
};

TossErrors errors_of(const MultibodySystem& sys, const MultibodyRollout::Trajectory& pred, const SystemToss& truth) {
  const int W = sys.width(), T = truth.steps(W);
  const auto verts = true_vertices(sys);
  TossErrors e;
  Kinematics kin;
  MultibodyContacts c;
  for (int k = 1; k < T; ++k) {
    const Eigen::Map<const Eigen::VectorXd> xt(truth.rows.data() + static_cast<size_t>(W) * k, W);
    const Eigen::VectorXd xp = pred.row(k).transpose();
    const double pe = (xp.segment<3>(4) - xt.segment<3>(4)).norm();
    const Eigen::Quaterniond qa(xp(0), xp(1), xp(2), xp(3)), qb(xt(0), xt(1), xt(2), xt(3));
    const Eigen::Quaterniond r = qa.normalized().conjugate() * qb.normalized();
    const double re = 2.0 * std::atan2(r.vec().norm(), std::abs(r.w())) * 180.0 / M_PI;
    kinematics(sys, xp.head(sys.nq()), kin);
    contact_frame(sys, kin, verts, c);
    const double pen = std::max(0.0, -c.phi.minCoeff());
    e.pos_k.push_back(pe);
    e.rot_k.push_back(re);
    e.pen_k.push_back(pen);
    e.position += pe / (T - 1);
    e.rotation_deg += re / (T - 1);
    e.penetration += pen / (T - 1);
  }
  return e;
}

}  // namespace

double multibody_rollout_position_error(const MultibodySystem& sys, const std::string& method,
                                        const nlohmann::json& params, const SystemTossSet& data,
                                        const std::vector<int>& tosses, int threads) {
  if (tosses.empty()) throw Error("rollout error: no tosses");
  for (int i : tosses)
    if (i < 0 || i >= static_cast<int>(data.tosses.size()))
      throw Error("rollout error: toss " + std::to_string(i) + " is out of range (the data have " +
                  std::to_string(data.tosses.size()) + " tosses)");
  const RunModel m = model_of(sys, method, params, "rollout error: the model");
  const Rollouts r = rollouts(sys, m, data, tosses, threads);
  double pos = 0;
  for (size_t i = 0; i < tosses.size(); ++i)
    pos += errors_of(sys, r.tr[i], data.tosses[static_cast<size_t>(tosses[i])]).position / static_cast<double>(tosses.size());
  return pos;
}

bool is_multibody_run(const std::string& run_dir) {
  const fs::path p = fs::path(run_dir) / "config.json";
  if (!fs::exists(p)) return false;
  const nlohmann::json j = read_json_file(p.string());
  return j.contains("system") && !j["system"].get<std::string>().empty();
}

nlohmann::json evaluate_multibody_run(const EvalOptions& opt) {
  const LoadedRun L = load(opt);
  const std::vector<int> idx = select_tosses(opt.tosses, static_cast<int>(L.data.tosses.size()), L.split, L.same_data);
  const Rollouts r = rollouts(L.sys, L, L.data, idx, opt.threads);
  nlohmann::json per = nlohmann::json::array();
  double pos = 0, rot = 0, pen = 0;
  int diverged = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    const TossErrors e = errors_of(L.sys, r.tr[i], L.data.tosses[static_cast<size_t>(idx[i])]);
    pos += e.position / idx.size();
    rot += e.rotation_deg / idx.size();
    pen += e.penetration / idx.size();
    per.push_back({{"toss", idx[i]}, {"name", L.data.tosses[static_cast<size_t>(idx[i])].name},
                   {"position_error_m", e.position}, {"rotation_error_deg", e.rotation_deg},
                   {"penetration_m", e.penetration}});
    // diverged within the recorded rows (the batch runs to its longest toss)
    const int d = r.diverged_at[i];
    if (d >= 0 && d < L.data.tosses[static_cast<size_t>(idx[i])].steps(L.sys.width())) {
      per.back()["diverged_at_step"] = d;
      ++diverged;
    }
  }
  nlohmann::json j;
  j["method"] = L.method;
  j["system"] = L.sys.name;
  j["run"] = opt.run_dir;
  j["params"] = opt.params;
  j["data"] = opt.data.empty() ? L.cfg.data : opt.data;
  j["n_tosses"] = idx.size();
  j["position_error_m"] = pos;
  j["rotation_error_deg"] = rot;
  j["penetration_m"] = pen;
  // tosses whose simulation blew up: scored on their last valid state, held
  j["diverged_tosses"] = diverged;
  if (!L.end_to_end) {
    // (13a) against the system's nominal geometry
    const auto truth = true_vertices(L.sys);
    double vol = 0;
    for (int l = 0; l < L.sys.num_links(); ++l)
      vol += volume_error(truth[static_cast<size_t>(l)], L.model.vertices()[static_cast<size_t>(l)]) / L.sys.num_links();
    j["volume_error"] = vol;
    j["mu"] = L.model.mu();
    if (L.synthetic) {
      j["friction_error"] = std::abs(L.model.mu() - L.sys.mu);
      const std::vector<LinkInertia> learned = L.model.link_inertias();
      double s2 = 0;
      for (int l = 0; l < L.sys.num_links(); ++l) {
        const LinkInertia& t = L.sys.links[static_cast<size_t>(l)].inertia;
        const LinkInertia& g = learned[static_cast<size_t>(l)];
        const double Ibar = t.inertia_com.trace() / 3;
        const auto vec = [&](const LinkInertia& a) {
          Eigen::Matrix<double, 10, 1> v;
          v << a.mass / t.mass, a.com / 0.035, a.inertia_com(0, 0) / Ibar, a.inertia_com(1, 1) / Ibar,
              a.inertia_com(2, 2) / Ibar, a.inertia_com(0, 1) / Ibar, a.inertia_com(0, 2) / Ibar,
              a.inertia_com(1, 2) / Ibar;
          return v;
        };
        s2 += (vec(g) - vec(t)).squaredNorm();
      }
      j["inertia_error"] = std::sqrt(s2);
    }
  }
  j["tosses"] = per;
  return j;
}

void rollout_multibody_run(const EvalOptions& opt, int toss, const std::string& csv_path) {
  const LoadedRun L = load(opt);
  if (toss < 0 || toss >= static_cast<int>(L.data.tosses.size()))
    throw Error("--toss " + std::to_string(toss) + " is out of range (the data have " +
                std::to_string(L.data.tosses.size()) + " tosses)");
  const std::vector<MultibodyRollout::Trajectory> tr = rollouts(L.sys, L, L.data, {toss}, 1).tr;
  const SystemToss& truth = L.data.tosses[static_cast<size_t>(toss)];
  const TossErrors e = errors_of(L.sys, tr[0], truth);
  const int W = L.sys.width(), nj = L.sys.joints();
  std::ostringstream s;
  s << "step,t,px,py,pz,qw,qx,qy,qz";
  for (int j = 0; j < nj; ++j) s << ",theta" << j;
  s << ",true_px,true_py,true_pz,true_qw,true_qx,true_qy,true_qz";
  for (int j = 0; j < nj; ++j) s << ",true_theta" << j;
  s << ",position_error_m,rotation_error_deg,penetration_m\n" << std::setprecision(9);
  for (int k = 0; k < truth.steps(W); ++k) {
    const Eigen::Map<const Eigen::VectorXd> xt(truth.rows.data() + static_cast<size_t>(W) * k, W);
    s << k << ',' << k * L.data.dt;
    for (int i : {4, 5, 6, 0, 1, 2, 3}) s << ',' << tr[0](k, i);
    for (int j = 0; j < nj; ++j) s << ',' << tr[0](k, 7 + j);
    for (int i : {4, 5, 6, 0, 1, 2, 3}) s << ',' << xt(i);
    for (int j = 0; j < nj; ++j) s << ',' << xt(7 + j);
    if (k == 0)
      s << ",0,0,0\n";
    else
      s << ',' << e.pos_k[static_cast<size_t>(k - 1)] << ',' << e.rot_k[static_cast<size_t>(k - 1)] << ','
        << e.pen_k[static_cast<size_t>(k - 1)] << '\n';
  }
  write_text_atomic(csv_path, s.str());
}

}  // namespace impulse
