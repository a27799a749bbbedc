// Trains ContactNets Polytope on the built-in synthetic cube tosses (known geometry
// and friction) from the paper's 40%-noise start, for a few epochs, and checks that
// the validation loss fell. The run directory (checkpoint, history.csv, params.json)
// is the CLI's: `impulse eval --run <dir>` reads it.
//   train_from_cpp [RUN_DIR]   (default: a folder "run" here)
#include <impulse/learning/trainer.h>
#include <impulse/solvers/error.h>
#include <impulse/version.h>

#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
  impulse::TrainConfig cfg;
  cfg.method = "contactnets-polytope";
  cfg.data = IMPULSE_DATA;
  cfg.out = argc > 1 ? argv[1] : "run";
  cfg.max_epochs = 5;
  cfg.seed = 0;
  cfg.progress = false;
  try {
    const impulse::TrainResult r = impulse::train(cfg, std::cout);
    const double first = r.history.front().valid_loss, last = r.history.back().valid_loss;
    std::printf("impulse %s: %zu epochs, validation loss %.4g -> %.4g (best at epoch %d)\n", impulse::version(),
                r.history.size() - 1, first, last, r.best_epoch);
    return last < first ? 0 : 1;
  } catch (const impulse::Error& e) {
    std::fprintf(stderr, "train_from_cpp: %s\n", e.what());
    return 1;
  }
}
