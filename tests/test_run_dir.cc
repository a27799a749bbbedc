// A run directory is a small database (issue 17's prerequisite): each test
// below reproduces a defect a user met, and failed before the fix.
//  - killed between the last checkpoint and the readable outputs, or with a
//    damaged params.json / history.csv: a rerun rewrites them from the checkpoint;
//  - checkpoint.json deleted: a rerun is refused instead of training over the results;
//  - a second training into a directory in use is refused (a lock);
//  - non-finite numeric options are refused with the option's name;
//  - an --out that cannot be created is an error message, not an abort;
//  - temporaries of a killed write are removed;
//  - the same data folder written differently is the same configuration.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/dynamics/synthetic.h"
#include "host/learning/trainer.h"
#include "io/toss_data.h"
#include "solvers/error.h"
#include "tests/test_util.h"

namespace impulse {
namespace {
namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) { return testing::fresh_dir("impulse_rundir_", name); }

const std::string& data_file() {
  static const std::string path = [] {
    SyntheticConfig sc;
    sc.n_tosses = 8;
    sc.seed = 3;
    const std::string p = temp_dir("data") + "/syn8.npz";
    write_tosses(p, generate_synthetic_tosses(sc));
    return p;
  }();
  return path;
}

std::string read(const std::string& path) { return testing::read_text_file(path); }

TrainConfig config(const std::string& out) {
  TrainConfig c;
  c.data = data_file();
  c.out = out;
  c.max_epochs = 2;
  c.batch_size = 32;
  c.progress = false;
  c.threads = 1;
  return c;
}

std::string error_of(const TrainConfig& c) {
  std::ostringstream log;
  try {
    train(c, log);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(RunDir, OutputsAreRewrittenFromTheCheckpoint) {
  const TrainConfig c = config(temp_dir("outputs"));
  std::ostringstream log;
  train(c, log);
  const std::string params = read(c.out + "/params.json"), history = read(c.out + "/history.csv");
  // killed after the checkpoint, before the outputs: params.json missing; history.csv cut short
  fs::remove(c.out + "/params.json");
  {
    std::ofstream h(c.out + "/history.csv", std::ios::trunc);
    h << history.substr(0, history.size() / 2);
  }
  train(c, log);
  EXPECT_EQ(read(c.out + "/params.json"), params);
  EXPECT_EQ(read(c.out + "/history.csv"), history);
  // a damaged params.json too
  {
    std::ofstream p(c.out + "/params.json", std::ios::trunc);
    p << params.substr(0, 20);
  }
  train(c, log);
  EXPECT_EQ(read(c.out + "/params.json"), params);
}

TEST(RunDir, ResultsWithoutCheckpointAreNotTrainedOver) {
  TrainConfig c = config(temp_dir("nockpt"));
  std::ostringstream log;
  train(c, log);
  const std::string params = read(c.out + "/params.json");
  fs::remove(c.out + "/checkpoint.json");
  c.seed = 9;  // even another seed or method
  const std::string e = error_of(c);
  EXPECT_NE(e.find("no checkpoint.json"), std::string::npos) << e;
  EXPECT_EQ(read(c.out + "/params.json"), params);
}

TEST(RunDir, ADifferentConfigurationIsRefusedBeforeTheFirstCheckpoint) {
  TrainConfig c = config(temp_dir("cfg"));
  std::ostringstream log;
  train(c, log);
  c.method = "end-to-end";
  const std::string e = error_of(c);
  EXPECT_NE(e.find("different configuration"), std::string::npos) << e;
  EXPECT_NE(e.find("method"), std::string::npos) << e;
}

TEST(RunDir, ASecondWriterIsRefused) {
  const TrainConfig c = config(temp_dir("lock"));
  // another process holds the run: its lock
  const int fd = ::open((c.out + "/.lock").c_str(), O_RDWR | O_CREAT, 0666);
  ASSERT_GE(fd, 0);
  // flock locks belong to the open file description: a second open() in this
  // process conflicts with it just as another process would
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string e = error_of(c);
  EXPECT_NE(e.find("in use by another training"), std::string::npos) << e;
  ::close(fd);
  EXPECT_EQ(error_of(c), "(accepted)");
}

TEST(RunDir, NonFiniteOptionsAreRefusedByName) {
  const std::string out = temp_dir("nan");
  const double nan = std::nan("");
  struct Case {
    const char* name;
    void (*set)(TrainConfig&, double);
  };
  const Case cases[] = {
      {"--lr", [](TrainConfig& c, double v) { c.lr = v; }},
      {"--eps", [](TrainConfig& c, double v) { c.eps = v; }},
      {"--init-noise", [](TrainConfig& c, double v) { c.init_noise = v; }},
      {"--max-seconds", [](TrainConfig& c, double v) { c.max_seconds = v; }},
      {"--weight-decay", [](TrainConfig& c, double v) { c.weight_decay = v; }},
  };
  for (const Case& k : cases) {
    TrainConfig c = config(out);
    k.set(c, nan);
    const std::string e = error_of(c);
    EXPECT_NE(e.find(k.name), std::string::npos) << k.name << ": " << e;
  }
  TrainConfig c = config(out);
  c.eps = INFINITY;
  EXPECT_NE(error_of(c).find("--eps"), std::string::npos);
  c = config(out);
  c.threads = -1;
  EXPECT_NE(error_of(c).find("--threads"), std::string::npos);
  EXPECT_FALSE(fs::exists(out + "/checkpoint.json"));
}

TEST(RunDir, AnOutThatCannotBeCreatedIsAnError) {
  const std::string dir = temp_dir("blocked");
  { std::ofstream f(dir + "/a_file"); f << "x"; }
  const std::string e = error_of(config(dir + "/a_file/run"));
  EXPECT_NE(e.find("cannot create the run directory"), std::string::npos) << e;
}

TEST(RunDir, StaleTemporariesAreRemovedAndTheDataPathIsCompared) {
  TrainConfig c = config(temp_dir("tmp"));
  std::ostringstream log;
  train(c, log);
  { std::ofstream f(c.out + "/params.json.tmp.99999"); f << "half a file"; }
  // the same file written another way (a redundant ./ and ..) is the same run
  const fs::path d = fs::path(data_file());
  c.data = (d.parent_path() / "." / ".." / d.parent_path().filename() / d.filename()).string();
  c.max_epochs = 3;
  const TrainResult r = train(c, log);
  EXPECT_TRUE(r.resumed);
  EXPECT_FALSE(fs::exists(c.out + "/params.json.tmp.99999"));
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// The Deep model's runs are reproducible from process to process, whatever
// OpenMP team Eigen would get (OMP_NUM_THREADS 1 and 2, dynamic teams): the
// reported defect was Deep differing from run to run with --threads 1.
TEST(RunDir, DeepIsReproducibleAcrossProcessesAndOpenMpTeams) {
  std::string theta[2];
  for (int k = 0; k < 2; ++k) {
    const std::string out = temp_dir("deepcli" + std::to_string(k));
    const std::string cmd = std::string("OMP_DYNAMIC=true OMP_NUM_THREADS=") + std::to_string(k + 1) + " " +
                            IMPULSE_BINARY + " train --method contactnets-deep --data " + data_file() +
                            " --epochs 1 --threads 1 --batch 32 --out " + out + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    theta[k] = nlohmann::json::parse(read(out + "/checkpoint.json")).at("theta").dump();
  }
  EXPECT_EQ(theta[0], theta[1]);
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

// impulse check --run: a finished run is consistent; each kind of damage is named.
TEST(RunDir, CheckVerifiesAFinishedRun) {
  const TrainConfig c = config(temp_dir("check"));
  std::ostringstream log;
  train(c, log);
  RunCheck k = check_run(c.out);
  EXPECT_TRUE(k.ok()) << (k.problems.empty() ? "" : k.problems[0]);
  EXPECT_TRUE(k.finished);
  EXPECT_EQ(k.epochs_done, 2);
  const std::string params = read(c.out + "/params.json");
  { std::ofstream p(c.out + "/params.json", std::ios::trunc); p << params.substr(0, params.size() - 30); }
  { std::ofstream t(c.out + "/history.csv.tmp.4242"); t << "x"; }
  k = check_run(c.out);
  ASSERT_EQ(k.problems.size(), 2u);
  EXPECT_NE(k.problems[0].find("params.json"), std::string::npos) << k.problems[0];
  EXPECT_NE(k.problems[1].find("interrupted write"), std::string::npos) << k.problems[1];
  // the same train command repairs it
  train(c, log);
  k = check_run(c.out);
  EXPECT_TRUE(k.ok()) << (k.problems.empty() ? "" : k.problems[0]);
  // an unfinished run is consistent but not finished; a missing checkpoint is a problem
  nlohmann::json cj = nlohmann::json::parse(read(c.out + "/config.json"));
  cj["max_epochs"] = 5;
  { std::ofstream f(c.out + "/config.json", std::ios::trunc); f << cj.dump(2); }
  k = check_run(c.out);
  EXPECT_TRUE(k.ok());
  EXPECT_FALSE(k.finished);
  fs::remove(c.out + "/checkpoint.json");
  k = check_run(c.out);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.problems[0].find("checkpoint.json"), std::string::npos);
}

}  // namespace
}  // namespace impulse
