#include "attn/signals.h"

#include <signal.h>

#include <atomic>
#include <cstring>

#include "attn/enum_names.h"
#include "attn/error.h"

namespace attn {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_pending{0};
std::atomic<bool> g_active{false};
struct sigaction g_previous[3];

extern "C" void record_signal(int signal) {
  int none = 0;
  g_pending.compare_exchange_strong(none, signal);
}

}  // namespace

DeferredSignals::DeferredSignals() {
  if (g_active.exchange(true)) throw Error("DeferredSignals: one at a time");
  g_pending.store(0);
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &g_previous[i]);
}

DeferredSignals::~DeferredSignals() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_active.store(false);
  if (const int signal = g_pending.exchange(0)) ::raise(signal);
}

int DeferredSignals::pending() const { return g_pending.load(); }

int DeferredSignals::take() { return g_pending.exchange(0); }

std::string signal_name(int signal) {
  static constexpr EnumName<int> kNames[] = {{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}};
  if (const char* name = enum_name(kNames, signal, nullptr)) return name;
  return "signal " + std::to_string(signal);
}

}  // namespace attn
