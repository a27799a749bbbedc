// The learning methods on multibody systems (CCN's family), for the trainer:
//   ccn, ccn-r      the CCN violation-implicit loss (host/learning/ccn.h), without
//                   and with the residual network;
//   diffsim, diffsim-r  the DiffSim baseline (host/learning/diffsim.h): the
//                   same model on the one-step prediction error through the
//                   Anitescu step, implicit gradients;
//   end-to-end      the End-to-end baseline of the CCN paper (App. A.3): an MLP
//                   4x256 tanh from the state (rotation as 9 entries) to the next
//                   velocity, trained on the squared velocity error, inputs and
//                   outputs normalized by the training set.
// Internal to host/learning (trainer.cc).
#pragma once

#include <memory>
#include <string>

#include "host/dynamics/multibody.h"
#include "host/learning/train_method.h"
#include "host/learning/trainer.h"

namespace impulse {

// the methods this file makes, for a given system
bool is_multibody_method(const std::string& method);

struct MultibodyData {
  MultibodySystem system;
  double dt = 0.0068;
  bool synthetic = false;  // the project's own simulated data (the paper's "sim" residual weights)
};

// TrainConfig::known parsed: the parameter groups given, not learned. Throws
// Error naming an item that is not geometry, friction or inertia, or repeated.
struct KnownGroups {
  bool geometry = false, friction = false, inertia = false;
};
KnownGroups known_groups(const std::string& list);

std::unique_ptr<Method> make_multibody_method(const TrainConfig& c, const MultibodyData& d, const Transitions& train);

}  // namespace impulse
