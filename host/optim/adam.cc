#include "host/optim/adam.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace impulse {

namespace {

std::string num(double x) {
  nlohmann::json j = x;
  return j.dump();
}

std::vector<double> to_vec(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

}  // namespace

void AdamWSettings::validate() const {
  if (!(std::isfinite(lr) && lr > 0))
    throw Error("AdamWSettings: lr must be finite and > 0, got " + num(lr));
  if (!(beta1 >= 0 && beta1 < 1))
    throw Error("AdamWSettings: beta1 must be in [0, 1), got " + num(beta1));
  if (!(beta2 >= 0 && beta2 < 1))
    throw Error("AdamWSettings: beta2 must be in [0, 1), got " + num(beta2));
  if (!(std::isfinite(eps) && eps > 0))
    throw Error("AdamWSettings: eps must be finite and > 0, got " + num(eps));
  if (!(std::isfinite(weight_decay) && weight_decay >= 0))
    throw Error("AdamWSettings: weight_decay must be finite and >= 0, got " + num(weight_decay));
}

AdamW::AdamW(Eigen::Index size, const AdamWSettings& settings) : settings_(settings) {
  settings_.validate();
  if (size < 0) throw Error("AdamW: size must be >= 0, got " + std::to_string(size));
  m_ = Eigen::VectorXd::Zero(size);
  v_ = Eigen::VectorXd::Zero(size);
}

void AdamW::set_settings(const AdamWSettings& s) {
  s.validate();
  settings_ = s;
}

void AdamW::set_lr(double lr) {
  AdamWSettings s = settings_;
  s.lr = lr;
  set_settings(s);
}

void AdamW::reset() {
  step_ = 0;
  m_.setZero();
  v_.setZero();
}

void AdamW::step(Eigen::Ref<Eigen::VectorXd> params,
                 const Eigen::Ref<const Eigen::VectorXd>& grad) {
  const Eigen::Index n = size();
  if (params.size() != n)
    throw Error("AdamW::step: params: expected " + std::to_string(n) + " entries, got " +
                std::to_string(params.size()));
  if (grad.size() != n)
    throw Error("AdamW::step: grad: expected " + std::to_string(n) + " entries, got " +
                std::to_string(grad.size()));
  for (Eigen::Index i = 0; i < n; ++i)
    if (!std::isfinite(grad[i]))
      throw Error("AdamW::step: grad[" + std::to_string(i) + "] is not finite (" + num(grad[i]) +
                  ")");
  const AdamWSettings& s = settings_;
  ++step_;
  // the operations and their order follow torch.optim.adamw._single_tensor_adamw
  const double decay = 1.0 - s.lr * s.weight_decay;
  const double w1 = 1.0 - s.beta1;  // lerp weight
  const double bc1 = 1.0 - std::pow(s.beta1, double(step_));
  const double bc2 = 1.0 - std::pow(s.beta2, double(step_));
  const double step_size = s.lr / bc1;
  const double bc2_sqrt = std::sqrt(bc2);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double g = grad[i];
    params[i] *= decay;
    // torch.lerp(m, g, w): m + w (g - m) for w < 0.5, else g - (g - m)(1 - w)
    m_[i] = w1 < 0.5 ? m_[i] + w1 * (g - m_[i]) : g - (g - m_[i]) * (1.0 - w1);
    v_[i] = v_[i] * s.beta2 + ((1.0 - s.beta2) * g) * g;  // mul_, addcmul_
    const double denom = std::sqrt(v_[i]) / bc2_sqrt + s.eps;
    params[i] += (-step_size * m_[i]) / denom;  // addcdiv_
  }
}

nlohmann::json AdamW::to_json() const {
  nlohmann::json j;
  j["format"] = "impulse.adamw";
  j["version"] = 1;
  j["settings"] = {{"lr", settings_.lr},
                   {"beta1", settings_.beta1},
                   {"beta2", settings_.beta2},
                   {"eps", settings_.eps},
                   {"weight_decay", settings_.weight_decay}};
  j["step"] = step_;
  j["m"] = to_vec(m_);
  j["v"] = to_vec(v_);
  return j;
}

AdamW AdamW::from_json(const nlohmann::json& j) {
  try {
    if (j.at("format").get<std::string>() != "impulse.adamw")
      throw Error("AdamW::from_json: format: expected \"impulse.adamw\", got " +
                  j.at("format").dump());
    if (j.at("version").get<int>() != 1)
      throw Error("AdamW::from_json: version: expected 1, got " + j.at("version").dump());
    const nlohmann::json& js = j.at("settings");
    AdamWSettings s;
    s.lr = js.at("lr").get<double>();
    s.beta1 = js.at("beta1").get<double>();
    s.beta2 = js.at("beta2").get<double>();
    s.eps = js.at("eps").get<double>();
    s.weight_decay = js.at("weight_decay").get<double>();
    const auto m = j.at("m").get<std::vector<double>>();
    const auto v = j.at("v").get<std::vector<double>>();
    if (m.size() != v.size())
      throw Error("AdamW::from_json: m and v: expected equal lengths, got " +
                  std::to_string(m.size()) + " and " + std::to_string(v.size()));
    AdamW opt(Eigen::Index(m.size()), s);
    opt.step_ = j.at("step").get<std::int64_t>();
    if (opt.step_ < 0)
      throw Error("AdamW::from_json: step must be >= 0, got " + std::to_string(opt.step_));
    opt.m_ = Eigen::Map<const Eigen::VectorXd>(m.data(), Eigen::Index(m.size()));
    opt.v_ = Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
    return opt;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("AdamW::from_json: ") + e.what());
  }
}

Eigen::VectorXd AdamW::state_vector() const {
  Eigen::VectorXd s(1 + 2 * size());
  s[0] = double(step_);
  s.segment(1, size()) = m_;
  s.segment(1 + size(), size()) = v_;
  return s;
}

void AdamW::set_state_vector(const Eigen::Ref<const Eigen::VectorXd>& state) {
  if (state.size() != 1 + 2 * size())
    throw Error("AdamW::set_state_vector: expected " + std::to_string(1 + 2 * size()) +
                " entries, got " + std::to_string(state.size()));
  const double t = state[0];
  if (!(t >= 0 && t < 0x1.0p53 && t == std::floor(t)))
    throw Error("AdamW::set_state_vector: step count must be a whole number >= 0, got " + num(t));
  step_ = std::int64_t(t);
  m_ = state.segment(1, size());
  v_ = state.segment(1 + size(), size());
}

}  // namespace impulse
