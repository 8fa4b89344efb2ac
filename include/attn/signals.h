#pragma once
// Holding back SIGINT, SIGTERM and SIGHUP while a piece of work must finish or be undone as
// a whole: writing a set of files (export's folder, a tokenizer's .model and .vocab), or
// training a tokenizer in a child process that a signal must stop and clean up after.
//
//   {
//     DeferredSignals held;          // the three signals are caught and recorded, process-wide
//     ... write the files ...
//     if (held.pending()) ...        // a signal arrived: stop early, or go on
//   }                                // handlers restored; a recorded signal is raised again
//
// Handlers, not a signal mask: a mask is per thread, and a process-directed signal would go
// to an OpenMP or OpenBLAS thread instead and kill the process half-way. One at a time.
#include <string>

#include "attn/error.h"

namespace attn {

// A signal (SIGINT, SIGTERM, SIGHUP) stopped work that cannot be resumed, such as training a
// tokenizer, after it was cleaned up: nothing of it was written. The CLI exits 128 + signal.
class InterruptedError : public Error {
 public:
  InterruptedError(const std::string& message, int signal) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

class DeferredSignals {
 public:
  DeferredSignals();
  // Restores the previous handlers; a signal recorded and not take()n is raised again, so
  // it has its usual effect (the default: the process ends by it; attn train's handler: the
  // run stops and saves at the next step) once the work is whole.
  ~DeferredSignals();
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;

  // The first signal recorded, 0 when none.
  int pending() const;
  // pending(), and forgets it: the caller acts on the signal itself (throws InterruptedError).
  int take();
};

// "SIGTERM", "SIGINT", "SIGHUP", else "signal N".
std::string signal_name(int signal);

}  // namespace attn
