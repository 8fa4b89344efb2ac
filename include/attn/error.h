#pragma once
// The library's exceptions. attn throws; it never aborts or exits.
// The CLI catches at main, prints the one-line message and exits non-zero.
#include <stdexcept>
#include <string>

namespace attn {

// Base of every error attn throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tensor of the wrong rank, shape or dtype arrived at an op boundary.
// Message: "<op>: '<arg>' expected (B=4, S, E=256), got (4, 7, 128)".
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A value the op cannot take: NaN where forbidden, an id outside the vocabulary,
// a length larger than S, a bad option. The message names the offending value.
class ValueError : public Error {
 public:
  using Error::Error;
};

// A file that cannot be read or written: missing, truncated, corrupt, mismatched.
class IoError : public Error {
 public:
  using Error::Error;
};

}  // namespace attn
