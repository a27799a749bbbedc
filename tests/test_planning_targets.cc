// Planning for any target in the supported range (host/planning/plan_report.h, issue 48):
// a fixed spread of targets over the range, N = 3 and 4, at least 95% of the plans valid by
// the criteria; `--targets` files, their errors and the refusal of targets outside the
// range; the batch's results the same on one thread and on two.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/planning/plan_report.h"
#include "solvers/error.h"
#include "test_util.h"

namespace impulse {
namespace {

// 12 directions 30° apart; the distances and heights cycle through the range's ends and
// middle, so every corner of the range is met
std::vector<Eigen::Vector3d> spread() {
  std::vector<Eigen::Vector3d> t;
  const double d[3] = {kTargetDistance[0], 0.5 * (kTargetDistance[0] + kTargetDistance[1]), kTargetDistance[1]};
  const double h[4] = {kTargetHeight[0], kTargetHeight[0] + (kTargetHeight[1] - kTargetHeight[0]) / 3,
                       kTargetHeight[1] - (kTargetHeight[1] - kTargetHeight[0]) / 3, kTargetHeight[1]};
  for (int i = 0; i < 12; ++i) {
    const double a = i * M_PI / 6;
    t.emplace_back(d[i % 3] * std::cos(a), d[i % 3] * std::sin(a), h[i % 4]);
  }
  return t;
}

TEST(PlanningTargets, NinetyFivePercentOfASpreadAreValid) {
  const std::vector<Eigen::Vector3d> targets = spread();
  int valid = 0, plans = 0;
  std::ostringstream why;
  for (int fingers : {3, 4}) {
    PlanRunOptions o;
    o.task.fingers = fingers;
    o.figures = false;
    o.out = testing::fresh_dir("plan_spread_", std::to_string(fingers));
    std::ostringstream log;
    const std::vector<PlanRun> runs = run_plan_targets(o, targets, 0, log);
    ASSERT_EQ(runs.size(), targets.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      ++plans;
      valid += runs[i].check.success;
      if (!runs[i].check.success)
        why << "N = " << fingers << ", target (" << targets[i].transpose() << "): worst criterion at "
            << runs[i].check.worst_ratio() << " of its bound\n";
    }
  }
  EXPECT_GE(valid, static_cast<int>(std::ceil(0.95 * plans))) << valid << " of " << plans << " valid\n" << why.str();
}

TEST(PlanningTargets, TargetsOutsideTheRangeAreRefusedByName) {
  PlanRunOptions o;
  o.figures = false;
  o.out = testing::fresh_dir("plan_range_", "a");
  std::ostringstream log;
  for (const Eigen::Vector3d& t : {Eigen::Vector3d(0.3, 0, 0.08), Eigen::Vector3d(0.01, 0.02, 0.08),
                                   Eigen::Vector3d(0.1, 0.1, 0.2), Eigen::Vector3d(0.1, 0, 0.01)}) {
    o.task.target = t;
    try {
      run_plan(o, log);
      ADD_FAILURE() << "target " << t.transpose() << " was planned";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--target"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("plan supports"), std::string::npos) << e.what();
    }
  }
  // in a batch, the target is named (by its name when given) and nothing is written
  o.out = testing::fresh_dir("plan_range_", "b") + "/batch";
  const std::vector<Eigen::Vector3d> two = {Eigen::Vector3d(0.1, 0, 0.05), Eigen::Vector3d(0.4, 0, 0.05)};
  try {
    run_plan_targets(o, two, 1, log);
    ADD_FAILURE() << "a batch with a target out of range ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target 2"), std::string::npos) << e.what();
  }
  try {
    run_plan_targets(o, two, 1, log, {"t.csv: row 2", "t.csv: row 4"});
    ADD_FAILURE() << "a batch with a target out of range ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv: row 4"), std::string::npos) << e.what();
  }
  PlanRunOptions bad = o;
  bad.starts = 0;
  EXPECT_THROW(run_plan_targets(bad, {two[0]}, 1, log), Error);
  EXPECT_THROW(run_plan_targets(o, {two[0]}, -1, log), Error) << "a negative thread count";
  EXPECT_FALSE(std::filesystem::exists(o.out)) << "nothing written before the checks pass";
}

TEST(PlanningTargets, TargetsFilesAreReadAndTheirErrorsNamed) {
  const std::string dir = testing::fresh_dir("plan_targets_file_", "a");
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::vector<Eigen::Vector3d> t = read_targets(file("ok.csv", "x, y, z\n# a comment\n0.1,0,0.05\r\n\n-0.1, 0.2 ,0.12\n"));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1], Eigen::Vector3d(-0.1, 0.2, 0.12));
  auto refused = [&](const std::string& name, const std::string& text, const std::string& says) {
    try {
      read_targets(file(name, text));
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused("two.csv", "0.1,0,0.05\n0.1,0\n", "row 2: expected 3 values");
  refused("four.csv", "0.1,0,0.05,1\n", "row 1: expected 3 values");
  refused("word.csv", "x,y,z\n0.1,zero,0.05\n", "row 2: 'zero' is not a finite number");
  refused("nan.csv", "0.1,nan,0.05\n", "'nan' is not a finite number");
  refused("trailing.csv", "0.1,0,0.05,\n", "expected 3 values");
  refused("space.csv", "0.1 5,0,0.05\n", "'0.1 5' is not a finite number");
  {  // the rows of the file, for the names of its targets
    std::vector<int> rows;
    read_targets(file("rows.csv", "x,y,z\n# c\n0.1,0,0.05\n\n-0.1,0.2,0.12\n"), &rows);
    EXPECT_EQ(rows, (std::vector<int>{3, 5}));
  }
  refused("empty.csv", "x,y,z\n", "no targets");
  refused("missing.csv", "", "no targets");
  try {
    read_targets(dir + "/absent.csv");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

// every column but the seconds
std::string without_seconds(const std::string& csv) {
  std::istringstream in(csv);
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = testing::csv_cells(line);
    for (size_t i = 0; i < cells.size(); ++i)
      if (i != 14) out << cells[i] << ',';
    out << '\n';
  }
  return out.str();
}

TEST(PlanningTargets, ABatchIsTheSameOnOneThreadAndOnTwo) {
  PlanRunOptions o;
  o.task.fingers = 3;
  o.figures = false;
  o.starts = 1;
  const std::vector<Eigen::Vector3d> targets = {Eigen::Vector3d(0.1, 0.05, 0.06), Eigen::Vector3d(-0.08, -0.1, 0.1)};
  std::string csv[2];
  for (int threads : {1, 2}) {
    o.out = testing::fresh_dir("plan_batch_", std::to_string(threads));
    std::ostringstream log;
    const std::vector<PlanRun> runs = run_plan_targets(o, targets, threads, log);
    EXPECT_NE(log.str().find("[2/2]"), std::string::npos) << "a line per finished plan";
    csv[threads - 1] = testing::read_text_file(o.out + "/targets.csv");
    EXPECT_EQ(std::count(csv[threads - 1].begin(), csv[threads - 1].end(), '\n'), 3) << "a header and a row per target";
    EXPECT_EQ(testing::read_text_file(o.out + "/target_002/plan.csv").empty(), false);
    EXPECT_NE(testing::read_text_file(o.out + "/target_001/log.txt").find("plan: wrote"), std::string::npos);
  }
  EXPECT_EQ(without_seconds(csv[0]), without_seconds(csv[1]));
}

// a plan that stops with an error (here: its folder cannot be made, a file is in the
// way) does not stop the batch: the other target's plan is made and both rows are written
TEST(PlanningTargets, ATargetThatFailsDoesNotStopTheBatch) {
  PlanRunOptions o;
  o.task.fingers = 3;
  o.figures = false;
  o.starts = 1;
  o.out = testing::fresh_dir("plan_batch_fail", "");
  std::filesystem::create_directories(o.out);
  std::ofstream(o.out + "/target_002") << "a file where target 2's folder would go\n";
  const std::vector<Eigen::Vector3d> targets = {Eigen::Vector3d(0.1, 0.05, 0.06), Eigen::Vector3d(-0.08, -0.1, 0.1)};
  std::ostringstream log;
  std::vector<PlanRun> runs;
  ASSERT_NO_THROW(runs = run_plan_targets(o, targets, 2, log));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].error.empty()) << runs[0].error;
  EXPECT_FALSE(testing::read_text_file(o.out + "/target_001/plan.csv").empty()) << "target 1 planned";
  EXPECT_FALSE(runs[1].check.success);
  EXPECT_NE(runs[1].error.find("target_002"), std::string::npos) << "the error names the folder: " << runs[1].error;
  EXPECT_NE(log.str().find("stopped with an error"), std::string::npos) << log.str();
  const std::string csv = testing::read_text_file(o.out + "/targets.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_NE(csv.find(",folder,error\n"), std::string::npos) << csv;
  std::istringstream rows(csv);
  std::string header, one, two;
  std::getline(rows, header), std::getline(rows, one), std::getline(rows, two);
  EXPECT_EQ(one.back(), ',') << "target 1: no error: " << one;
  EXPECT_EQ(two.rfind("2,", 0), 0u) << two;
  EXPECT_NE(two.find("target_002"), std::string::npos) << two;
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

PlanRunOptions turn_options(int fingers, double degrees) {
  PlanRunOptions o;
  o.task.fingers = fingers;
  o.task.turn = degrees * M_PI / 180;
  o.task.target = o.task.start + Eigen::Vector3d(0, 0, 0.05);
  o.figures = false;
  return o;
}

// capsule-turn: lifted 5 cm and turned 90° about the vertical, valid for N = 3, 4 and 5; the
// plan ends exactly turned (a bound), and both replays within the criteria
TEST(PlanningTurn, NinetyDegreesIsValidForThreeToFiveFingers) {
  for (int fingers : {3, 4, 5}) {
    SCOPED_TRACE("N = " + std::to_string(fingers));
    PlanRunOptions o = turn_options(fingers, 90);
    o.out = testing::fresh_dir("plan_turn_", std::to_string(fingers));
    std::ostringstream log;
    const PlanRun r = run_plan(o, log);
    const PlanCheck& c = r.check;
    EXPECT_TRUE(c.success) << log.str();
    EXPECT_LT(c.plan_axis_error, 1e-6) << "the last orientation keyframe is the target's";
    EXPECT_LE(std::max({c.plan_ends_error, c.forces_ends_error, c.hand_ends_error}), 0.01);
    // replay 1 turns the capsule (before the knots' impulses were asked of the forces, it
    // did not turn at all: 1.57 rad off)
    EXPECT_LT(c.forces_axis_error, 0.2);
    EXPECT_LT(c.hand_axis_error, 0.2);
    EXPECT_NE(log.str().find("capsule-turn"), std::string::npos);
    const std::string summary = testing::read_text_file(o.out + "/summary.json");
    EXPECT_NE(summary.find("\"capsule-turn\""), std::string::npos);
    EXPECT_NE(summary.find("final_ends_error_m"), std::string::npos);
  }
}

TEST(PlanningTurn, BadTurnsAreRefusedByName) {
  std::ostringstream log;
  auto refused = [&](PlanRunOptions o, const std::string& says) {
    o.out = testing::fresh_dir("plan_turn_bad_", "a");
    try {
      run_plan(o, log);
      ADD_FAILURE() << "planned: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  PlanRunOptions o = turn_options(3, 90);
  o.task.target = Eigen::Vector3d(0.1, 0, 0.08);
  refused(o, "in place");
  o = turn_options(3, 90);
  o.method = "notes";
  refused(o, "capsule-move only");
  o = turn_options(3, 200);
  refused(o, "180");
  o = turn_options(3, 90);
  o.task.target(2) = 0.2;
  refused(o, "height");
}

}  // namespace
}  // namespace impulse
