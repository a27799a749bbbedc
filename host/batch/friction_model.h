// How a contact QP writes Coulomb friction: exact second-order cones (kCone: the
// solvers' SOC rows, host/batch/qp_batch.h's ConeSpec) or the ContactNets reference
// implementation's octagon of 8 linear rows (kOctagon). The ContactNets loss
// (host/learning/contactnets_loss.h) and the generated benchmark batches
// (host/batch/generate.h) take it.
#pragma once

namespace impulse {

enum class FrictionModel { kCone, kOctagon };

}  // namespace impulse
