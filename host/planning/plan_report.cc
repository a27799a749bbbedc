#include "host/planning/plan_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <iomanip>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/batch/parallel.h"
#include "host/planning/capsule.h"
#include "io/figure_script.h"
#include "io/file_lock.h"
#include "io/files.h"
#include "solvers/error.h"

namespace impulse {

namespace fs = std::filesystem;

namespace {

std::string contact_name(int j, int fingers) {
  if (j < fingers) return "finger" + std::to_string(j);
  if (j == fingers) return "palm";
  return "ground" + std::to_string(j - fingers - 1);
}

void put3(std::ostream& o, const Eigen::Vector3d& v) { o << ',' << v(0) << ',' << v(1) << ',' << v(2); }
void head3(std::ostream& o, const std::string& n) { o << ',' << n << "_x," << n << "_y," << n << "_z"; }

nlohmann::json terms_json(const CioTerms& t) {
  return {{"contact_invariance", t.ci}, {"physics", t.physics}, {"task", t.task}, {"penetration", t.penetration},
          {"reach", t.reach},           {"smoothness", t.smooth}, {"total", t.total}};
}

}  // namespace

PlanCheck check_plan(const CioProblem& pb, const Eigen::VectorXd& theta, const CioWeights& w, const HandReplayOptions& hand) {
  const CioTask& t = pb.task();
  const std::vector<CioSample> plan = pb.samples(theta, w);
  const int N = t.fingers, J = pb.contacts();
  PlanCheck c;
  c.plan_final_error = (plan.back().x_obj - t.target).norm();
  const double mg = pb.mass() * 9.81;
  for (const CioSample& s : plan) {
    const Capsule cap = pb.capsule_at(s.x_obj, s.q);
    c.worst_residual_force = std::max(c.worst_residual_force, s.residual_force.norm());
    c.worst_residual_moment = std::max(c.worst_residual_moment, s.residual_moment.norm());
    for (int j = 0; j < J; ++j) {
      const Eigen::Vector3d& r = s.contacts[static_cast<size_t>(j)];
      const CapsuleProjection pr = project_to_capsule(cap, r);
      const Eigen::Vector3d n = j <= N ? Eigen::Vector3d(-pr.normal) : Eigen::Vector3d::UnitZ();
      const Eigen::Vector3d& F = s.forces[static_cast<size_t>(j)];
      const double fn = F.dot(n), ft = (F - fn * n).norm();
      c.worst_cone_violation = std::max({c.worst_cone_violation, ft - t.mu * fn, -fn});
    }
  }
  const CioGaps gaps = contact_gaps(pb, plan);
  c.active = gaps.active;
  c.worst_object_gap = gaps.object;
  c.worst_hand_gap = gaps.hand;
  const std::vector<CioSample> dense = pb.samples(theta, w, hand.dt);
  for (const CioSample& s : dense) c.worst_dense_residual_force = std::max(c.worst_dense_residual_force, s.residual_force.norm());
  c.forces = replay_forces(pb, dense, hand.dt, true);
  c.hand_forces_only = replay_forces(pb, dense, hand.dt, false);
  c.hand = replay_hand(pb, dense, hand);
  // the replays at the cost's samples
  const int every = static_cast<int>(std::lround(t.dt / hand.dt));
  for (ReplayResult* r : {&c.forces, &c.hand, &c.hand_forces_only}) {
    std::vector<Eigen::Vector3d> at;
    std::vector<Eigen::Quaterniond> aq;
    for (size_t s = 0; s < r->replayed.size(); s += static_cast<size_t>(every)) {
      at.push_back(r->replayed[s]);
      aq.push_back(r->orientation[s]);
    }
    if (at.size() != plan.size()) throw Error("plan: the replay step must divide the sample interval");
    r->replayed = at;
    r->orientation = aq;
  }
  c.final_ok = std::max({c.plan_final_error, c.forces.final_error, c.hand.final_error}) <= kPlanFinalError;
  if (t.turn != 0) {
    const Eigen::Vector3d want = t.target_orientation() * Eigen::Vector3d::UnitX();
    auto axis_error = [&](const Eigen::Quaterniond& q) {
      return std::acos(std::min(1.0, std::abs((q * Eigen::Vector3d::UnitX()).dot(want))));
    };
    auto ends_error = [&](const Eigen::Vector3d& x, const Eigen::Quaterniond& q) {
      const Eigen::Vector3d h = t.half_length * (q * Eigen::Vector3d::UnitX()), hw = t.half_length * want;
      // each end tracked through the motion (the replays integrate the orientation): a capsule
      // that did not turn 180° is not taken for one that did, end for end
      return std::max((x + h - t.target - hw).norm(), (x - h - t.target + hw).norm());
    };
    c.plan_axis_error = axis_error(plan.back().q);
    c.forces_axis_error = axis_error(c.forces.orientation.back());
    c.hand_axis_error = axis_error(c.hand.orientation.back());
    c.plan_ends_error = ends_error(plan.back().x_obj, plan.back().q);
    c.forces_ends_error = ends_error(c.forces.replayed.back(), c.forces.orientation.back());
    c.hand_ends_error = ends_error(c.hand.replayed.back(), c.hand.orientation.back());
    c.final_ok = c.final_ok && std::max({c.plan_ends_error, c.forces_ends_error, c.hand_ends_error}) <= kPlanFinalError;
  }
  c.contacts_ok = c.worst_object_gap <= kPlanContactGap && c.worst_hand_gap <= kPlanContactGap;
  c.cones_ok = c.worst_cone_violation <= 1e-6 * mg;
  c.success = c.final_ok && c.contacts_ok && c.cones_ok;
  return c;
}

double PlanCheck::worst_ratio() const {
  double worst = cones_ok ? 0.0 : 2.0;
  const double F = kPlanFinalError, G = kPlanContactGap;
  for (double r : {plan_final_error / F, forces.final_error / F, hand.final_error / F, plan_ends_error / F, forces_ends_error / F,
                   hand_ends_error / F, worst_object_gap / G, worst_hand_gap / G})
    worst = std::isfinite(r) ? std::max(worst, r) : std::numeric_limits<double>::infinity();  // a NaN is the worst
  return worst;
}

namespace {

// the options' checks, before any folder is made (the target's range apart)
void check_options(const PlanRunOptions& o) {
  if (o.out.empty()) throw Error("plan: --out is required");
  if (o.method != "cio" && o.method != "notes") throw Error("plan: --method must be cio or notes, got '" + o.method + "'");
  if (o.notes_iterations < 1) throw Error("plan: --notes-iterations must be >= 1");
  if (o.starts < 1) throw Error("plan: --starts must be >= 1, got " + std::to_string(o.starts));
  if (!(std::abs(o.perturb) < 0.01)) throw Error("plan: --perturb must be below 0.01 in size, got " + std::to_string(o.perturb));
  if (o.method == "notes" && o.task.turn != 0) throw Error("plan: --method notes plans capsule-move only (the notes' task)");
  (void)CioProblem(o.task);  // the task's own checks
}

// a CSV field as RFC 4180 writes it: quoted where it holds a comma, a quote or a line break
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

PlanRun run_plan(const PlanRunOptions& o, std::ostream& log) {
  check_options(o);
  if (o.method == "cio") check_target(o.task, "--target");
  CioTask task = o.task;
  if (o.method == "notes") task.target_as_bound = false;  // the notes' task was a penalty
  const CioProblem pb(task);  // validates the task
  fs::create_directories(o.out);
  const FileLock lock((fs::path(o.out) / ".lock").string(), o.out, "another impulse plan",
                      "wait for it or choose another --out");
  CioOptions co = o.method == "notes" ? notes_options(o.notes_iterations) : CioOptions{};
  if (o.perturb != 0) {
    CioWeights& w = co.weights;
    for (double* v : {&w.task, &w.penetration, &w.reach, &w.smooth, &w.ground, &w.lambda, &w.gate}) *v *= 1 + o.perturb;
    for (CioStage& st : co.stages) {
      st.ci *= 1 + o.perturb;
      st.physics *= 1 + o.perturb;
    }
  }
  const int every = o.method == "notes" ? 5 : 200;
  const size_t stages = co.stages.size();
  co.progress = [&](int stage, int it, const CioTerms& tm) {
    if (it % every != 0) return;
    log << "  stage " << stage + 1 << "/" << stages << ", evaluation " << it << ": total " << std::setprecision(4)
        << tm.total << " (task " << tm.task << ", contact " << tm.ci << ", physics " << tm.physics << ")\n";
    log.flush();
  };
  log << "plan: " << o.task.name() << ", " << o.task.fingers << " fingers, target (" << o.task.target.transpose() << "), method " << o.method
      << ", " << pb.size() << " variables, " << stages << " stage(s)\n";
  PlanRun run;
  const int starts = o.method == "notes" ? 1 : o.starts;  // the notes' method is reproduced as it was: once
  for (int start = 0; start < starts; ++start) {
    co.start = pb.initial_guess(start);
    for (Eigen::Index i = 0; i < co.start.size(); ++i) co.start(i) *= 1 + (i % 2 ? -o.perturb : o.perturb);
    CioResult result = optimize_cio(pb, co);
    log << "plan: start " << start + 1 << " optimized in " << std::setprecision(3) << result.seconds << " s";
    if (result.polish_rounds > 0)
      log << " (the last stage " << result.polish_rounds << " more time(s): contacts were over "
          << kPlanContactGap * 1e3 << " mm off)";
    log << "; replaying\n";
    PlanCheck check = check_plan(pb, result.theta, co.weights, o.hand);
    ++run.starts_tried;
    run.seconds += result.seconds;
    const bool better = start == 0 || (check.success && !run.check.success) || check.worst_ratio() < run.check.worst_ratio();
    if (better) {
      run.result = std::move(result);
      run.check = check;
      run.start = start;
    }
    if (run.check.success) break;
    if (start + 1 < starts)
      log << "plan: start " << start + 1 << " is not valid (worst criterion at " << std::setprecision(3) << check.worst_ratio()
          << " of its bound); trying start " << start + 2 << "\n";
  }
  run.plan = pb.samples(run.result.theta, co.weights);
  const PlanCheck& c = run.check;
  const int N = o.task.fingers, J = pb.contacts();

  std::ostringstream pc;
  pc << std::setprecision(9) << "t";
  head3(pc, "object");
  pc << ",object_qw,object_qx,object_qy,object_qz";
  head3(pc, "palm");
  for (int i = 0; i < N; ++i) head3(pc, "finger" + std::to_string(i) + "_tip");
  for (int j = 0; j < J; ++j) {
    const std::string n = contact_name(j, N);
    head3(pc, n + "_point");
    pc << ',' << n << "_c";
    head3(pc, n + "_force");
  }
  pc << '\n';
  for (const CioSample& s : run.plan) {
    pc << s.t;
    put3(pc, s.x_obj);
    pc << ',' << s.q.w() << ',' << s.q.x() << ',' << s.q.y() << ',' << s.q.z();
    put3(pc, s.palm);
    for (int i = 0; i < N; ++i) put3(pc, s.fingertips[static_cast<size_t>(i)]);
    for (int j = 0; j < J; ++j) {
      put3(pc, s.contacts[static_cast<size_t>(j)]);
      pc << ',' << s.c[static_cast<size_t>(j)];
      put3(pc, s.forces[static_cast<size_t>(j)]);
    }
    pc << '\n';
  }
  write_text_atomic((fs::path(o.out) / "plan.csv").string(), pc.str());
  run.files.push_back((fs::path(o.out) / "plan.csv").string());

  std::ostringstream rc;
  rc << std::setprecision(9) << "t";
  head3(rc, "planned");
  head3(rc, "replay_forces");
  head3(rc, "replay_hand");
  head3(rc, "replay_hand_forces_only");
  rc << '\n';
  for (size_t s = 0; s < run.plan.size(); ++s) {
    rc << run.plan[s].t;
    put3(rc, run.plan[s].x_obj);
    put3(rc, c.forces.replayed[s]);
    put3(rc, c.hand.replayed[s]);
    put3(rc, c.hand_forces_only.replayed[s]);
    rc << '\n';
  }
  write_text_atomic((fs::path(o.out) / "replay.csv").string(), rc.str());
  run.files.push_back((fs::path(o.out) / "replay.csv").string());

  std::ostringstream sc;
  sc << std::setprecision(9) << "stage,contact_weight,physics_weight,iterations,contact_invariance,physics,task,penetration,reach,smoothness,total\n";
  for (size_t st = 0; st < run.result.stage_terms.size(); ++st) {
    const CioTerms& t = run.result.stage_terms[st];
    const CioStage& cs = co.stages[std::min(st, co.stages.size() - 1)];  // (a polish round repeats the last)
    sc << st + 1 << ',' << cs.ci << ',' << cs.physics << ',' << cs.iterations << ','
       << t.ci << ',' << t.physics << ',' << t.task << ',' << t.penetration << ',' << t.reach << ',' << t.smooth << ','
       << t.total << '\n';
  }
  write_text_atomic((fs::path(o.out) / "stages.csv").string(), sc.str());
  run.files.push_back((fs::path(o.out) / "stages.csv").string());

  auto replay_json = [](const ReplayResult& r) {
    return nlohmann::json{{"final_error_m", r.final_error},
                           {"max_deviation_m", r.max_deviation},
                           {"max_rotation_deviation_rad", r.max_rotation_deviation},
                           {"failed_steps", r.failed_steps}};
  };
  const nlohmann::json summary = {
      {"task",
       {{"name", o.task.name()},
        {"turn_deg", o.task.turn * 180 / M_PI},
        {"fingers", N},
        {"start", {o.task.start(0), o.task.start(1), o.task.start(2)}},
        {"target", {o.task.target(0), o.task.target(1), o.task.target(2)}},
        {"radius_m", o.task.radius},
        {"half_length_m", o.task.half_length},
        {"mass_kg", pb.mass()},
        {"mu", o.task.mu},
        {"keyframes", o.task.keyframes},
        {"duration_s", o.task.duration},
        {"sample_dt_s", o.task.dt}}},
      {"method", o.method},
      {"variables", pb.size()},
      {"seconds", run.seconds},
      {"final_terms", terms_json(run.result.stage_terms.back())},
      {"polish_rounds", run.result.polish_rounds},
      {"start", run.start + 1},
      {"starts_tried", run.starts_tried},
      {"criteria",
       {{"plan_final_error_m", c.plan_final_error},
        {"replay_forces", replay_json(c.forces)},
        {"replay_hand", replay_json(c.hand)},
        {"replay_forces_strict_hand_only", replay_json(c.hand_forces_only)},
        {"final_within_1cm", c.final_ok},
        {"final_axis_error_rad", {{"plan", c.plan_axis_error}, {"replay_forces", c.forces_axis_error}, {"replay_hand", c.hand_axis_error}}},
        {"final_ends_error_m", {{"plan", c.plan_ends_error}, {"replay_forces", c.forces_ends_error}, {"replay_hand", c.hand_ends_error}}},
        {"active_contacts", c.active},
        {"worst_active_object_gap_m", c.worst_object_gap},
        {"worst_active_hand_gap_m", c.worst_hand_gap},
        {"contacts_within_2mm", c.contacts_ok},
        {"worst_cone_violation_N", c.worst_cone_violation},
        {"worst_residual_force_N", c.worst_residual_force},
        {"worst_residual_moment_Nm", c.worst_residual_moment},
        {"worst_residual_force_between_samples_N", c.worst_dense_residual_force},
        {"weight_N", pb.mass() * 9.81},
        {"forces_in_cones", c.cones_ok}}},
      {"hand_replay", {{"dt_s", o.hand.dt}, {"sphere_radius_m", o.hand.sphere_radius}, {"squeeze_m", o.hand.squeeze}}},
      {"success", c.success}};
  write_text_atomic((fs::path(o.out) / "summary.json").string(), summary.dump(1) + "\n");
  run.files.push_back((fs::path(o.out) / "summary.json").string());

  log << std::setprecision(3) << "plan: final object " << c.plan_final_error * 1e3 << " mm from the target (replay 1: "
      << c.forces.final_error * 1e3 << " mm, replay 2: " << c.hand.final_error * 1e3 << " mm; largest deviations "
      << c.forces.max_deviation * 1e3 << " and " << c.hand.max_deviation * 1e3 << " mm; replay 1 under the hand's forces only: "
      << c.hand_forces_only.final_error * 1e3 << " mm)\n";
  if (o.task.turn != 0)
    log << "plan: final axis " << c.plan_axis_error << " rad from the target's (replay 1: " << c.forces_axis_error
        << " rad, replay 2: " << c.hand_axis_error << " rad); its ends " << c.plan_ends_error * 1e3 << " mm from the target's (replay 1: "
        << c.forces_ends_error * 1e3 << " mm, replay 2: " << c.hand_ends_error * 1e3 << " mm)\n";
  log << "plan: active contacts within " << c.worst_object_gap * 1e3 << " mm of the object and " << c.worst_hand_gap * 1e3
      << " mm of their hand points; worst cone violation " << c.worst_cone_violation << " N; unexplained force up to "
      << c.worst_residual_force << " N at the samples, " << c.worst_dense_residual_force << " N between them (weight " << pb.mass() * 9.81 << " N)\n"
      << "plan: " << (c.success ? "valid" : "NOT valid") << " by the criteria; " << o.out << "/summary.json\n";

  if (o.figures) {
    if (const std::string py = python_with_matplotlib(o.python); py.empty()) {
      log << "plan figures: skipped: " << o.python << " with matplotlib not found (apt-get install python3-matplotlib)\n";
    } else {
      log.flush();
      const std::vector<std::string> figs = run_figure_script(py, o.figure_script, {o.out});
      run.files.insert(run.files.end(), figs.begin(), figs.end());
    }
  }
  log << "plan: wrote " << run.files.size() << " files to " << o.out << "\n";
  return run;
}

void check_target(const CioTask& t, const std::string& what) {
  const Eigen::Vector3d d = t.target - t.start;
  const double horizontal = d.head<2>().norm(), z = t.target(2);
  std::ostringstream m;
  m << std::setprecision(4);
  if (t.turn != 0 && horizontal > 1e-9)
    m << what << ": capsule-turn turns the capsule in place: the target (" << t.target.transpose()
      << ") must lie above the start, got " << horizontal << " m from it horizontally";
  else if (t.turn == 0 && !(horizontal >= kTargetDistance[0] && horizontal <= kTargetDistance[1]))
    m << what << ": the target (" << t.target.transpose() << ") lies " << horizontal << " m from the start horizontally; plan supports "
      << kTargetDistance[0] << "-" << kTargetDistance[1] << " m";
  else if (!(z >= kTargetHeight[0] && z <= kTargetHeight[1]))
    m << what << ": the target (" << t.target.transpose() << ") is at height " << z << " m; plan supports " << kTargetHeight[0]
      << "-" << kTargetHeight[1] << " m (the capsule's centre; it rests at " << t.radius << " m)";
  else
    return;
  throw Error(m.str());
}

std::vector<Eigen::Vector3d> read_targets(const std::string& path, std::vector<int>* rows) {
  if (rows) rows->clear();
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the targets file");
  std::vector<Eigen::Vector3d> out;
  std::string line;
  int row = 0;
  while (std::getline(in, line)) {
    ++row;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    // the fields, each trimmed (a space inside one is an error, not a separator)
    std::vector<std::string> fields;
    {
      std::stringstream ss(line);
      std::string f;
      while (std::getline(ss, f, ',')) {
        const size_t a = f.find_first_not_of(" \t"), b = f.find_last_not_of(" \t");
        fields.push_back(a == std::string::npos ? std::string() : f.substr(a, b - a + 1));
      }
      if (!line.empty() && line.back() == ',') fields.emplace_back();
    }
    if (out.empty() && fields == std::vector<std::string>{"x", "y", "z"}) continue;  // the header
    if (fields.size() != 3) throw Error(path + ": row " + std::to_string(row) + ": expected 3 values x,y,z, got '" + line + "'");
    std::vector<double> v;
    for (const std::string& item : fields) {
      size_t used = 0;
      double x = 0;
      try {
        x = std::stod(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || !std::isfinite(x))
        throw Error(path + ": row " + std::to_string(row) + ": '" + item + "' is not a finite number (expected x,y,z in metres)");
      v.push_back(x);
    }
    out.emplace_back(v[0], v[1], v[2]);
    if (rows) rows->push_back(row);
  }
  if (out.empty()) throw Error(path + ": no targets (one x,y,z per row)");
  return out;
}

std::vector<PlanRun> run_plan_targets(const PlanRunOptions& o, const std::vector<Eigen::Vector3d>& targets, int threads,
                                      std::ostream& log, const std::vector<std::string>& names) {
  check_options(o);
  if (targets.empty()) throw Error("plan: no targets");
  if (!names.empty() && names.size() != targets.size()) throw Error("plan: a name for each target, or none");
  resolve_threads(threads);  // names a bad count
  for (size_t i = 0; i < targets.size(); ++i) {  // every target checked before any plan runs
    CioTask t = o.task;
    t.target = targets[i];
    if (o.method == "cio") check_target(t, names.empty() ? "target " + std::to_string(i + 1) : names[i]);
  }
  fs::create_directories(o.out);
  const FileLock lock((fs::path(o.out) / ".lock").string(), o.out, "another impulse plan",
                      "wait for it or choose another --out");
  const int n = static_cast<int>(targets.size());
  log << "plan: " << n << " targets, " << o.task.fingers << " fingers, on " << std::min(resolve_threads(threads), n)
      << " thread(s); one line per plan as it finishes\n";
  log.flush();
  std::vector<PlanRun> runs(targets.size());
  std::mutex mu;
  int done = 0;
  auto folder = [&](int i) {
    std::ostringstream f;
    f << "target_" << std::setw(3) << std::setfill('0') << i + 1;
    return (fs::path(o.out) / f.str()).string();
  };
  parallel_for(n, std::min(resolve_threads(threads), n), [&](int, int begin, int end) {
    for (int i = begin; i < end; ++i) {
      PlanRunOptions one = o;
      one.task.target = targets[static_cast<size_t>(i)];
      one.out = folder(i);
      std::ostringstream one_log;
      PlanRun& r = runs[static_cast<size_t>(i)];
      try {
        r = run_plan(one, one_log);
        write_text_atomic((fs::path(one.out) / "log.txt").string(), one_log.str());
      } catch (const std::exception& e) {  // this target's plan only: the others go on
        r = PlanRun{};
        r.check.success = false;
        r.error = e.what();
        one_log << "plan: error: " << r.error << "\n";
        try {  // its log where the folder can be written (the error may be that it cannot)
          fs::create_directories(one.out);
          write_text_atomic((fs::path(one.out) / "log.txt").string(), one_log.str());
        } catch (const std::exception&) {
        }
      }
      const std::lock_guard<std::mutex> g(mu);
      log << "  [" << ++done << "/" << n << "] target " << i + 1 << " (" << targets[static_cast<size_t>(i)].transpose() << "): ";
      if (!r.error.empty())
        log << "NOT valid, stopped with an error: " << r.error << "\n";
      else
        log << (r.check.success ? "valid" : "NOT valid") << ", start " << r.start + 1 << " of " << r.starts_tried << ", "
            << std::setprecision(3) << r.seconds << " s\n";
      log.flush();
    }
  });
  std::ostringstream tc;
  tc << std::setprecision(9)
     << "target,x,y,z,fingers,valid,plan_final_error_m,replay_forces_final_error_m,replay_hand_final_error_m,"
        "worst_object_gap_m,worst_hand_gap_m,worst_cone_violation_N,start,starts_tried,seconds,folder,error\n";
  int valid = 0;
  for (int i = 0; i < n; ++i) {
    const PlanRun& r = runs[static_cast<size_t>(i)];
    const PlanCheck& c = r.check;
    valid += c.success;
    const Eigen::Vector3d& t = targets[static_cast<size_t>(i)];
    tc << i + 1 << ',' << t(0) << ',' << t(1) << ',' << t(2) << ',' << o.task.fingers << ',' << (c.success ? 1 : 0) << ','
       << c.plan_final_error << ',' << c.forces.final_error << ',' << c.hand.final_error << ',' << c.worst_object_gap << ','
       << c.worst_hand_gap << ',' << c.worst_cone_violation << ',' << r.start + 1 << ',' << r.starts_tried << ',' << r.seconds << ','
       << fs::path(folder(i)).filename().string() << ',' << csv_field(r.error) << '\n';
  }
  write_text_atomic((fs::path(o.out) / "targets.csv").string(), tc.str());
  log << "plan: " << valid << " of " << n << " plans valid by the criteria; " << (fs::path(o.out) / "targets.csv").string() << "\n";
  return runs;
}

}  // namespace impulse
