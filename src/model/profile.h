// Opt-in wall-clock breakdown of the forward pass (QINFER_PROFILE=1 in the
// environment): each timed part adds its seconds to a process-wide counter;
// `qinfer bench` prints the table. Off, a scope costs one predictable branch.
#pragma once
#include <chrono>
#include <string>

namespace qinfer::model {

enum class Part {
  kEmbed, kNorms, kGdnProj, kGdnConv, kGdnRule, kGdnOut, kAttnProj, kAttnCore, kAttnOut,
  kRouter, kExperts, kExpertsDown, kCombine, kHead, kCount
};

bool profiling();                      // QINFER_PROFILE set to something other than 0
void profile_add(Part p, double seconds);
void profile_reset();
std::string profile_report();          // one line per part: seconds, share, calls

class ProfileScope {
 public:
  explicit ProfileScope(Part p) : part_(p), on_(profiling()) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~ProfileScope() {
    if (on_) profile_add(part_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Part part_;
  bool on_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace qinfer::model
