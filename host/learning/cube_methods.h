// The cube's methods for train() (host/learning/trainer.h): ContactNets with the Polytope
// or the Deep contact model, and the End-to-end baseline (cube_methods.cc); the CCN
// family's are in multibody_methods.h.
#pragma once

#include <memory>

#include <Eigen/Core>

#include "host/dynamics/rigid_body.h"
#include "host/learning/train_method.h"
#include "host/learning/trainer.h"
#include "io/toss_data.h"

namespace impulse {

// The method cfg.method names (contactnets-polytope, contactnets-deep, end-to-end) on cube
// tosses of constants `meta`, its normalization taken from the training transitions.
std::unique_ptr<Method> make_cube_method(const TrainConfig& c, const TossMeta& meta, const Transitions& train,
                                         int n_valid);

// End-to-end's network input of a state (18 features), as trained and as rolled out.
Eigen::VectorXd e2e_features(const State& x);

}  // namespace impulse
