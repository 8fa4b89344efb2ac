// DeferredSignals (attn/signals.h): SIGINT, SIGTERM and SIGHUP wait while a set of files is
// written, and take()n signals are not raised again.
#include "attn/signals.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>

namespace {

std::atomic<int> g_seen{0};
extern "C" void note_signal(int signal) { g_seen.store(signal); }

// Installs note_signal for SIGTERM for the test's length.
struct NoteSigterm {
  struct sigaction previous {};
  NoteSigterm() {
    struct sigaction action {};
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGTERM, &action, &previous);
    g_seen.store(0);
  }
  ~NoteSigterm() { ::sigaction(SIGTERM, &previous, nullptr); }
};

TEST(DeferredSignals, ASignalWaitsAndIsRaisedAgain) {
  NoteSigterm noted;
  {
    attn::DeferredSignals held;
    ::raise(SIGTERM);
    EXPECT_EQ(held.pending(), SIGTERM);
    EXPECT_EQ(g_seen.load(), 0) << "the signal reached its handler while held";
  }
  EXPECT_EQ(g_seen.load(), SIGTERM) << "the held signal was lost";
}

TEST(DeferredSignals, ATakenSignalIsNotRaisedAgain) {
  NoteSigterm noted;
  {
    attn::DeferredSignals held;
    ::raise(SIGTERM);
    EXPECT_EQ(held.take(), SIGTERM);
    EXPECT_EQ(held.pending(), 0);
  }
  EXPECT_EQ(g_seen.load(), 0);
  EXPECT_EQ(attn::signal_name(SIGTERM), "SIGTERM");
}

}  // namespace
