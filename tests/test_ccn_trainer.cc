// Training the CCN family (ccn, ccn-r, diffsim, diffsim-r, end-to-end on a multibody system) with
// the trainer: a run lowers its validation loss, resumes bit for bit after an
// interruption, gives the same result on 1 and 2 threads, and bad
// combinations of options and data are refused with a message. Data: six real
// elbow tosses copied into a temporary impulse-multibody file (skipped with a
// message when ../shared is absent).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/dynamics/multibody_sim.h"
#include "host/learning/ccn.h"
#include "host/learning/evaluate.h"
#include "host/learning/trainer.h"
#include "io/system_tosses.h"
#include "io/files.h"
#include "solvers/error.h"
#include "tests/test_util.h"

namespace impulse {
namespace {
namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) { return testing::fresh_dir("impulse_ccn_trainer_", name); }

std::string elbow_dir() {
  return testing::shared_data("articulated_elbow");
}

// six real tosses (rows 0..59 of each) as an impulse-multibody file; "" when absent
const std::string& small_elbow_file() {
  static const std::string path = []() -> std::string {
    SystemTossSet all;
    try {
      all = load_system_tosses(elbow_dir(), 15);
    } catch (const Error&) {
      return "";
    }
    SystemTossSet s = all;
    s.tosses.clear();
    for (int i = 0; i < 6; ++i) {
      SystemToss t = all.tosses[static_cast<size_t>(i)];
      t.rows.resize(60 * 15);
      s.tosses.push_back(t);
    }
    const std::string p = temp_dir("data") + "/elbow6.npz";
    write_system_tosses(p, s);
    return p;
  }();
  return path;
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(testing::read_text_file(path)); }

TrainConfig base(const std::string& method, const std::string& out) {
  TrainConfig c;
  c.method = method;
  c.system = "elbow";
  c.data = small_elbow_file();
  c.out = out;
  c.seed = 3;
  c.max_epochs = 3;
  c.batch_size = 32;
  c.progress = false;
  c.threads = 1;
  return c;
}

// a one-epoch run of method into a fresh directory named name, trained
TrainConfig one_epoch(const std::string& method, const std::string& name, std::ostream& log) {
  TrainConfig c = base(method, temp_dir(name));
  c.max_epochs = 1;
  train(c, log);
  return c;
}

// eval of run `dir` with the parameters file `params` there, on every toss
EvalOptions every_toss(const std::string& dir, const std::string& params) {
  EvalOptions e;
  e.run_dir = dir;
  e.params = params;
  e.tosses = "all";
  return e;
}

TEST(CcnTrainer, EachMethodLowersItsValidationLoss) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  for (const std::string m : {"ccn", "ccn-r", "diffsim", "diffsim-r", "end-to-end"}) {
    std::ostringstream log;
    const TrainResult r = train(base(m, temp_dir("lower_" + m)), log);
    ASSERT_EQ(r.history.size(), 4u) << m;
    EXPECT_LT(r.best_valid, r.history[0].valid_loss) << m << "\n" << log.str();
    EXPECT_GT(r.best_epoch, 0) << m;
  }
}

TEST(CcnTrainer, ParamsAreReadableAndPhysical) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  const std::string out = temp_dir("params");
  std::ostringstream log;
  train(base("ccn", out), log);
  const nlohmann::json p = read_json(out + "/params.json");
  EXPECT_EQ(p.at("format"), "impulse.ccn");
  EXPECT_EQ(p.at("system"), "elbow");
  double mass = 0;
  for (const auto& l : p.at("links")) {
    mass += l.at("mass_kg").get<double>();
    EXPECT_EQ(l.at("vertices_m").size(), 8u);
  }
  EXPECT_NEAR(mass, 0.74, 1e-12);  // the total mass is held
  EXPECT_GT(p.at("mu").get<double>(), 0);
}

// An interrupted run resumed from its checkpoint ends exactly where the
// uninterrupted one does (the CCN QPs start cold every step).
TEST(CcnTrainer, ResumeIsBitExactAndThreadCountsAgree) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  TrainConfig whole = base("ccn-r", temp_dir("whole"));
  train(whole, log);
  TrainConfig part = base("ccn-r", temp_dir("part"));
  part.max_epochs = 1;
  train(part, log);
  part.max_epochs = 3;
  const TrainResult r = train(part, log);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(read_json(whole.out + "/checkpoint.json").at("theta"), read_json(part.out + "/checkpoint.json").at("theta"));
  TrainConfig two = base("ccn-r", temp_dir("two"));
  two.threads = 2;
  train(two, log);
  EXPECT_EQ(read_json(whole.out + "/checkpoint.json").at("theta"), read_json(two.out + "/checkpoint.json").at("theta"));
}

// A run of the printed-form loss (its config.json without ccn_loss_form, as every run
// before 2026-11-25) is not resumed under the current form: the error names the field.
TEST(CcnTrainer, RunOfAnotherLossFormIsNotResumed) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  TrainConfig c = one_epoch("ccn", "form", log);
  nlohmann::json cfg = read_json(c.out + "/config.json");
  EXPECT_EQ(cfg.at("ccn_loss_form").get<int>(), kCcnLossForm);
  cfg.erase("ccn_loss_form");
  std::ofstream(c.out + "/config.json") << cfg.dump(2) << "\n";
  // a run of an older impulse: its checkpoint does not carry the configuration
  nlohmann::json ck = read_json(c.out + "/checkpoint.json");
  ck.erase("config");
  std::ofstream(c.out + "/checkpoint.json") << ck.dump() << "\n";
  c.max_epochs = 2;
  testing::expect_error([&] { train(c, log); }, {"different configuration", "ccn_loss_form"});
  // DiffSim's loss has no such form
  const TrainConfig d = one_epoch("diffsim", "form_diffsim", log);
  EXPECT_FALSE(read_json(d.out + "/config.json").contains("ccn_loss_form"));
}

// The default smoothing is the documented one: recorded tosses (a CCN folder) get
// H = 3, said in the log and written to config.json, and train exactly as an
// explicit --smooth-velocities 3; impulse's own .npz gets none.
TEST(CcnTrainer, DefaultSmoothingIsTheDocumentedOneForRecordedTosses) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  TrainConfig c = base("ccn", temp_dir("smooth_default"));
  c.data = elbow_dir();
  c.tosses = 2;
  c.max_epochs = 1;
  ASSERT_EQ(c.smooth_velocities, -1) << "the default";
  train(c, log);
  EXPECT_EQ(read_json(c.out + "/config.json").at("smooth_velocities").get<int>(), 3);
  EXPECT_NE(log.str().find("H = 3 (the default for recorded tosses"), std::string::npos) << log.str();
  TrainConfig e = c;
  e.out = temp_dir("smooth_explicit");
  e.smooth_velocities = 3;
  train(e, log);
  EXPECT_EQ(read_json(c.out + "/checkpoint.json").at("theta"), read_json(e.out + "/checkpoint.json").at("theta"));
  // the same run resumes under the default (config.json holds the value it chose)
  c.max_epochs = 2;
  EXPECT_NO_THROW(train(c, log));
  const TrainConfig n = one_epoch("ccn", "smooth_npz", log);  // impulse's .npz
  EXPECT_FALSE(read_json(n.out + "/config.json").contains("smooth_velocities"));
}

TEST(CcnTrainer, BadOptionsAndDataAreRefused) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  const auto message = [&](TrainConfig c) -> std::string {
    try {
      train(c, log);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  TrainConfig c = base("ccn", temp_dir("bad1"));
  c.system = "";
  EXPECT_NE(message(c).find("needs --system"), std::string::npos) << message(c);
  c = base("contactnets-polytope", temp_dir("bad2"));
  EXPECT_NE(message(c).find("for --system elbow"), std::string::npos);
  c = base("ccn", temp_dir("bad3"));
  c.system = "cube";  // 15-wide elbow data for the 13-wide cube
  const std::string m = message(c);
  EXPECT_NE(m.find("15"), std::string::npos) << m;
  EXPECT_NE(m.find("13"), std::string::npos) << m;
  c = base("ccn", temp_dir("bad4"));
  c.lr = std::nan("");
  EXPECT_NE(message(c).find("--lr"), std::string::npos);
  c = base("ccn", temp_dir("bad5"));
  c.system = "sphere";
  EXPECT_NE(message(c).find("sphere"), std::string::npos);
  c = base("ccn", temp_dir("bad6"));
  c.known = "inertia,mass";
  EXPECT_NE(message(c).find("'mass' is not a parameter group"), std::string::npos) << message(c);
  c.known = "friction,friction";
  EXPECT_NE(message(c).find("'friction' is named twice"), std::string::npos) << message(c);
  c.known = "geometry,";
  EXPECT_NE(message(c).find("'' is not a parameter group"), std::string::npos) << message(c);
  c = base("end-to-end", temp_dir("bad7"));
  c.known = "inertia";
  EXPECT_NE(message(c).find("--known"), std::string::npos) << message(c);
  c = base("ccn", temp_dir("bad8"));
  c.select = "rollouts";
  EXPECT_NE(message(c).find("--select 'rollouts'"), std::string::npos) << message(c);
  c = base("ccn", temp_dir("bad9"));
  c.smooth_velocities = -2;  // (-1: the data's default)
  EXPECT_NE(message(c).find("--smooth-velocities"), std::string::npos) << message(c);
  c.smooth_velocities = 11;
  EXPECT_NE(message(c).find("--smooth-velocities"), std::string::npos) << message(c);
  // the ContactNets cube path has neither
  c = base("contactnets-polytope", temp_dir("bad10"));
  c.system = "";
  c.select = "rollout";
  EXPECT_NE(message(c).find("--select rollout applies to --system data"), std::string::npos) << message(c);
  c.select = "loss";
  c.smooth_velocities = 2;
  EXPECT_NE(message(c).find("--smooth-velocities applies to --system data"), std::string::npos) << message(c);
}

// --select rollout: every epoch's validation figure is the validation tosses'
// mean rollout position error, the best epoch is its minimum, params.json is
// that epoch's model, and eval of params.json on the validation tosses reports
// the same figure. The run resumes bit for bit, gives the same figures on 2
// threads, and check_run accepts it; with patience 1 it stops at the first
// epoch that does not improve the figure.
TEST(CcnTrainer, SelectionByValidationRollouts) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  TrainConfig c = base("ccn", temp_dir("select"));
  c.select = "rollout";
  c.smooth_velocities = 2;
  c.max_epochs = 4;
  c.patience = 10;
  train(c, log);
  const nlohmann::json cfg = read_json(c.out + "/config.json");
  EXPECT_EQ(cfg.at("select").get<std::string>(), "rollout");
  EXPECT_EQ(cfg.at("smooth_velocities").get<int>(), 2);
  // history.csv: the last column, one value per epoch 0..4
  std::istringstream hs(testing::read_text_file(c.out + "/history.csv"));
  std::string line;
  std::getline(hs, line);
  ASSERT_NE(line.find(",valid_position_error_m"), std::string::npos) << line;
  std::vector<double> fig;
  while (std::getline(hs, line)) fig.push_back(std::stod(line.substr(line.rfind(',') + 1)));
  ASSERT_EQ(fig.size(), 5u);
  const int best = static_cast<int>(std::min_element(fig.begin(), fig.end()) - fig.begin());
  const nlohmann::json p = read_json(c.out + "/params.json");
  EXPECT_EQ(p.at("best_epoch").get<int>(), best);
  EXPECT_NEAR(p.at("best_valid_position_error_m").get<double>(), fig[static_cast<size_t>(best)],
              1e-9 * fig[static_cast<size_t>(best)]);  // the CSV's 10 digits
  EXPECT_FALSE(p.contains("best_valid_loss"));
  for (double f : fig) EXPECT_GT(f, 0.0);
  // eval on the validation tosses reports the same figure (to the CSV's 10 digits)
  EvalOptions e;
  e.run_dir = c.out;
  std::string valid;
  for (int i : cfg.at("split").at("valid").get<std::vector<int>>()) valid += (valid.empty() ? "" : ",") + std::to_string(i);
  e.tosses = valid;
  EXPECT_NEAR(evaluate_run(e).at("position_error_m").get<double>(), fig[static_cast<size_t>(best)],
              1e-9 * fig[static_cast<size_t>(best)]);
  EXPECT_TRUE(check_run(c.out).finished);
  EXPECT_TRUE(check_run(c.out).problems.empty());
  // resumed after 2 epochs: the same checkpoint
  TrainConfig part = c;
  part.out = temp_dir("select_part");
  part.max_epochs = 2;
  train(part, log);
  part.max_epochs = 4;
  EXPECT_TRUE(train(part, log).resumed);
  EXPECT_EQ(read_json(c.out + "/checkpoint.json").at("theta"), read_json(part.out + "/checkpoint.json").at("theta"));
  EXPECT_EQ(read_json(c.out + "/params.json"), read_json(part.out + "/params.json"));
  TrainConfig two = c;
  two.out = temp_dir("select_two");
  two.threads = 2;
  train(two, log);
  const nlohmann::json h1 = read_json(c.out + "/checkpoint.json").at("history"),
                       h2 = read_json(two.out + "/checkpoint.json").at("history");
  ASSERT_EQ(h1.size(), h2.size());
  for (size_t i = 0; i < h1.size(); ++i)
    EXPECT_EQ(h1[i].at("valid_position_error_m"), h2[i].at("valid_position_error_m")) << "epoch " << i;
  // patience 1: stops at the first epoch whose figure is no better than the best before it
  TrainConfig early = c;
  early.out = temp_dir("select_early");
  early.patience = 1;
  early.max_epochs = 30;
  const TrainResult er = train(early, log);
  const nlohmann::json he = read_json(early.out + "/checkpoint.json").at("history");
  double lowest = he[0].at("valid_position_error_m").get<double>();
  size_t stop = 0;
  for (size_t i = 1; i < he.size() && stop == 0; ++i) {
    const double f = he[i].at("valid_position_error_m").get<double>();
    if (f < lowest)
      lowest = f;
    else
      stop = i;
  }
  if (stop == 0) {
    EXPECT_EQ(he.size(), 31u) << "no epoch failed to improve, so all 30 ran";
  } else {
    EXPECT_TRUE(er.early_stopped);
    EXPECT_EQ(he.size(), stop + 1) << "ran past the first epoch without a better rollout figure";
    EXPECT_NE(log.str().find("no better validation rollout error for 1 epochs"), std::string::npos);
  }
}

// A model whose rollouts blow up (here End-to-end predicting 2000 m/s) is scored on
// the last valid state of each toss, which eval counts as diverged, instead of
// failing the evaluation.
TEST(CcnTrainer, DivergedRolloutsAreCountedNotFatal) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  std::ostringstream log;
  const TrainConfig c = one_epoch("end-to-end", "diverge", log);
  nlohmann::json p = read_json(c.out + "/params.json");
  std::vector<double> mean = p.at("output_mean").get<std::vector<double>>();
  mean[3] = 2000;  // base v_x, m/s: past kDivergedSpeed
  p["output_mean"] = mean;
  write_text_atomic(c.out + "/blown.json", p.dump());
  EvalOptions e = every_toss(c.out, "blown.json");
  const nlohmann::json m = evaluate_run(e);
  EXPECT_EQ(m.at("diverged_tosses").get<int>(), m.at("n_tosses").get<int>());
  for (const auto& t : m.at("tosses")) EXPECT_EQ(t.at("diverged_at_step").get<int>(), 1);
  EXPECT_TRUE(std::isfinite(m.at("position_error_m").get<double>()));
  EXPECT_TRUE(std::isfinite(m.at("rotation_error_deg").get<double>()));
  // the trained model itself does not diverge
  e.params = "params.json";
  EXPECT_EQ(evaluate_run(e).at("diverged_tosses").get<int>(), 0);
}

// --known: the named groups keep the system's published values through
// training (even under a weight decay, which acts on the optimizer's copy),
// the others start random and are learned.
TEST(CcnTrainer, KnownGroupsStayAtThePublishedValues) {
  if (small_elbow_file().empty())
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real elbow tosses", elbow_dir(), "elbow"));
  const nlohmann::json nominal = CcnModel(system_by_name("elbow"), false).to_json();
  for (const std::string m : {"ccn", "diffsim"}) {
    TrainConfig c = base(m, temp_dir("known_" + m));
    c.known = "inertia,friction";
    c.weight_decay = 0.1;
    std::ostringstream log;
    const TrainResult r = train(c, log);
    EXPECT_LT(r.best_valid, r.history[0].valid_loss) << m << "\n" << log.str();
    for (const std::string file : {"/init_params.json", "/params.json"}) {
      const nlohmann::json p = read_json(c.out + file);
      EXPECT_EQ(p.at("mu"), nominal.at("mu")) << m << file;
      for (size_t l = 0; l < 2; ++l) {
        EXPECT_EQ(p.at("links")[l].at("log_cholesky"), nominal.at("links")[l].at("log_cholesky")) << m << file;
        EXPECT_NE(p.at("links")[l].at("vertices_m"), nominal.at("links")[l].at("vertices_m")) << m << file;
      }
    }
    // without --known the same seed starts from a random inertia
    const TrainConfig free = one_epoch(m, "free_" + m, log);
    EXPECT_NE(read_json(free.out + "/init_params.json").at("links")[0].at("log_cholesky"),
              nominal.at("links")[0].at("log_cholesky"));
  }
  // geometry given: every vertex is the published one after training
  TrainConfig g = base("ccn", temp_dir("known_geometry"));
  g.known = "geometry";
  std::ostringstream log;
  train(g, log);
  const nlohmann::json p = read_json(g.out + "/params.json");
  for (size_t l = 0; l < 2; ++l)
    EXPECT_EQ(p.at("links")[l].at("vertices_m"), nominal.at("links")[l].at("vertices_m"));
  EXPECT_NE(p.at("mu"), nominal.at("mu"));
}

// The true model evaluated on tosses of the same simulator: rollouts follow the
// data (to the rollout's solver tolerance) and every parameter error is zero.
TEST(CcnTrainer, EvaluatingTheTruthOnItsOwnTossesGivesZeroErrors) {
  SyntheticSystemOptions o;
  o.system = "cube";
  o.tosses = 10;
  o.seed = 4;
  const std::string dir = temp_dir("truth");
  write_system_tosses(dir + "/tosses.npz", generate_system_tosses(o));
  TrainConfig c;
  c.method = "ccn";
  c.system = "cube";
  c.data = dir + "/tosses.npz";
  c.out = dir + "/run";
  c.max_epochs = 1;
  c.progress = false;
  std::ostringstream log;
  train(c, log);
  nlohmann::json truth = CcnModel(cube_system(), false).to_json();
  truth["method"] = "ccn";
  write_text_atomic(c.out + "/truth.json", truth.dump());
  EvalOptions e = every_toss(c.out, "truth.json");
  const nlohmann::json m = evaluate_run(e);
  EXPECT_EQ(m["n_tosses"].get<int>(), 10);
  EXPECT_LT(m["position_error_m"].get<double>(), 1e-4);
  EXPECT_LT(m["rotation_error_deg"].get<double>(), 1e-2);
  EXPECT_LT(m["volume_error"].get<double>(), 1e-12);
  EXPECT_EQ(m["friction_error"].get<double>(), 0.0);
  EXPECT_LT(m["inertia_error"].get<double>(), 1e-9);
  // and a random model is far off
  e.params = "init_params.json";
  const nlohmann::json r = evaluate_run(e);
  EXPECT_GT(r["position_error_m"].get<double>(), 100 * m["position_error_m"].get<double>() + 1e-3);
  EXPECT_GT(r["volume_error"].get<double>(), 0.05);
  // the rollout CSV: a header and one row per state
  rollout_run(e, 3, dir + "/toss3.csv");
  std::ifstream f(dir + "/toss3.csv");
  std::string line;
  int rows = 0;
  std::getline(f, line);
  EXPECT_NE(line.find("position_error_m"), std::string::npos);
  while (std::getline(f, line)) ++rows;
  EXPECT_EQ(rows, o.states);
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// --residual-layers / --residual-width shape CCN-R's network: the run's params hold a
// network of that shape, its config records it, and the options are refused where there is
// no network or out of range
TEST(CcnTrainer, TheResidualNetworksShapeIsAnOption) {
  SyntheticSystemOptions o;
  o.system = "cube";
  o.tosses = 6;
  o.seed = 5;
  const std::string dir = temp_dir("residual_shape");
  write_system_tosses(dir + "/tosses.npz", generate_system_tosses(o));
  TrainConfig c;
  c.method = "ccn-r";
  c.system = "cube";
  c.data = dir + "/tosses.npz";
  c.out = dir + "/run";
  c.max_epochs = 1;
  c.progress = false;
  c.residual_layers = 3;
  c.residual_width = 16;
  std::ostringstream log;
  train(c, log);
  const nlohmann::json p = read_json(c.out + "/params.json");
  EXPECT_EQ(p.at("network").at("hidden_sizes"), nlohmann::json::array({16, 16, 16})) << p.at("network").dump().substr(0, 200);
  const nlohmann::json cfg = read_json(c.out + "/config.json");
  EXPECT_EQ(cfg.at("residual_layers").get<int>(), 3);
  EXPECT_EQ(cfg.at("residual_width").get<int>(), 16);
  TrainConfig bad = c;
  bad.out = dir + "/bad";
  bad.method = "ccn";
  EXPECT_THROW(validate_train_config(bad), Error) << "ccn has no network";
  bad.method = "ccn-r";
  bad.residual_layers = 0;
  EXPECT_THROW(validate_train_config(bad), Error);
  bad.residual_layers = 2;
  bad.residual_width = 5000;
  EXPECT_THROW(validate_train_config(bad), Error);
}

}  // namespace
}  // namespace impulse
