#include "attn/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "attn/io/atomic_file.h"
#include "attn/io/checksum.h"
#include "attn/io/input_file.h"
#include "attn/json.h"
#include "attn/printable.h"

namespace attn::io {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using ordered_json = nlohmann::ordered_json;

std::string qname(const std::string& name) { return "'" + printable(name, false, 120) + "'"; }

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw IoError(printable(path, false, 400) + ": " + problem);
}

std::string errno_text(int e) { return std::strerror(e); }

const char* st_dtype(DType d) { return d == DType::f32 ? "F32" : "I32"; }

std::string dims_str(const std::vector<int64_t>& dims) { return Shape(dims).str(); }

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Reads exactly `n` bytes at `offset`; false on a short read (file changed under us).
bool read_exact(int fd, void* data, size_t n, uint64_t offset, int& error) {
  auto* p = static_cast<char*>(data);
  error = 0;
  while (n > 0) {
    const size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    const ssize_t got = ::pread(fd, p, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      error = errno;
      return false;
    }
    if (got == 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

const void* tensor_bytes(const Tensor& t) {
  return t.dtype() == DType::f32 ? static_cast<const void*>(t.f32()) : static_cast<const void*>(t.i32());
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t begin, end;
};

// A JSON value as a short one-line excerpt for messages.
std::string excerpt(const ordered_json& v) {
  return printable(v.dump(-1, ' ', true, ordered_json::error_handler_t::replace), false, 60);
}

uint64_t parse_u64(const ordered_json& v, bool& ok) {
  if (!v.is_number_unsigned()) {
    // A non-negative integer written as a signed JSON number is fine too.
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
    ok = false;
    return 0;
  }
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& path, const std::string& name, const ordered_json& info, uint64_t buffer_bytes) {
  const std::string who = "tensor " + qname(name);
  if (!info.is_object()) fail(path, who + ": header entry must be a JSON object, got " + excerpt(info));
  Entry e;
  e.name = name;
  auto dt = info.find("dtype");
  if (dt == info.end() || !dt->is_string()) fail(path, who + ": header entry has no \"dtype\" string");
  const std::string dtype = dt->get<std::string>();
  if (dtype == "F32")
    e.dtype = DType::f32;
  else if (dtype == "I32")
    e.dtype = DType::i32;
  else
    fail(path, who + " has dtype " + qname(dtype) + "; attn reads F32 and I32 only");

  auto sh = info.find("shape");
  if (sh == info.end() || !sh->is_array()) fail(path, who + ": header entry has no \"shape\" array");
  // Bytes needed, with overflow checks: the product of the non-zero dims must stay
  // small enough that numel × 4 fits in int64 (so Shape::numel never overflows either).
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 4;
  uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (const auto& d : *sh) {
    bool ok = true;
    const uint64_t v = parse_u64(d, ok);
    if (!ok) fail(path, who + ": \"shape\" must hold non-negative integers, got " + excerpt(*sh));
    if (v > kLimit) fail(path, who + ": shape " + excerpt(*sh) + " is too large");
    if (v == 0) {
      has_zero = true;
    } else {
      if (nonzero_product > kLimit / v) fail(path, who + ": shape " + excerpt(*sh) + " is too large");
      nonzero_product *= v;
    }
    e.dims.push_back(static_cast<int64_t>(v));
  }
  const uint64_t needed = has_zero ? 0 : nonzero_product * 4;

  auto off = info.find("data_offsets");
  bool ok = off != info.end() && off->is_array() && off->size() == 2;
  if (ok) {
    e.begin = parse_u64((*off)[0], ok);
    if (ok) e.end = parse_u64((*off)[1], ok);
  }
  if (!ok || e.begin > e.end)
    fail(path, who + ": \"data_offsets\" must be [begin, end] with 0 <= begin <= end, got " +
                   (off == info.end() ? std::string("nothing") : excerpt(*off)));
  const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.end > buffer_bytes)
    fail(path, who + " data_offsets " + range + " run past the end of the data buffer (" +
                   std::to_string(buffer_bytes) + " bytes; truncated file?)");
  if (e.end - e.begin != needed)
    fail(path, who + " data_offsets " + range + " hold " + std::to_string(e.end - e.begin) + " bytes, shape " +
                   dims_str(e.dims) + " " + dtype_name(e.dtype) + " needs " + std::to_string(needed));
  return e;
}

SafetensorsFile load_impl(const std::string& path) {
  Fd fd(open_regular_file(path));  // a FIFO is refused, never waited on
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail(path, "cannot stat: " + errno_text(errno));
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8)
    fail(path,
         "file is " + std::to_string(file_size) + " bytes, too short for a safetensors header (needs at least 8)");

  unsigned char len_bytes[8];
  int error = 0;
  if (!read_exact(fd.fd, len_bytes, 8, 0, error))
    fail(path, "cannot read the header length: " + (error ? errno_text(error) : std::string("unexpected end of file")));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " is larger than the limit of " +
                   std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (not a safetensors file, or damaged)");
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the " + std::to_string(file_size - 8) +
                   " bytes after the length field (truncated file?)");
  if (header_len < 2) fail(path, "header length " + std::to_string(header_len) + " is too small for a JSON object");

  std::string text(static_cast<size_t>(header_len), '\0');
  if (!read_exact(fd.fd, text.data(), text.size(), 8, error))
    fail(path, "cannot read the header: " + (error ? errno_text(error) : std::string("unexpected end of file")));
  // Parsed with depth and size limits (attn/json.h), noting duplicate names (JSON allows
  // them, safetensors does not).
  std::string duplicate;
  std::unordered_set<std::string> keys;
  ordered_json header;
  try {
    header = parse_ordered_json(text, "header", [&](const std::string& key) {
      if (!keys.insert(key).second && duplicate.empty()) duplicate = key;
    });
  } catch (const IoError& e) {
    fail(path, e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!duplicate.empty()) fail(path, "header names " + qname(duplicate) + " more than once");

  const uint64_t buffer_bytes = file_size - 8 - header_len;
  const uint64_t data_start = 8 + header_len;
  SafetensorsFile out;
  out.path = path;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      const ordered_json& meta = it.value();
      if (meta.is_null()) continue;
      if (!meta.is_object()) fail(path, "\"__metadata__\" must be a JSON object of strings, got " + excerpt(meta));
      for (auto m = meta.begin(); m != meta.end(); ++m) {
        if (!m.value().is_string())
          fail(path,
               "\"__metadata__\" value for key " + qname(m.key()) + " must be a string, got " + excerpt(m.value()));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), it.value(), buffer_bytes));
  }

  // The tensors' bytes tile the data buffer: no two share bytes, no gap between them or
  // before the first, nothing after the last (empty tensors occupy none).
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const Entry& b = *by_offset[i];
    if (i > 0 && b.begin < covered) {
      const Entry& a = *by_offset[i - 1];
      fail(path, "tensors " + qname(a.name) + " [" + std::to_string(a.begin) + ", " + std::to_string(a.end) + "] and " +
                     qname(b.name) + " [" + std::to_string(b.begin) + ", " + std::to_string(b.end) + "] overlap");
    }
    if (b.begin > covered)
      fail(path, "a gap of " + std::to_string(b.begin - covered) + " bytes before tensor " + qname(b.name) +
                     " (the safetensors format forbids unused bytes; damaged file?)");
    covered = b.end;
  }
  if (covered < buffer_bytes)
    fail(path, std::to_string(buffer_bytes - covered) +
                   " bytes after the last tensor (the safetensors format "
                   "forbids trailing data; damaged or appended-to file?)");

  // Checksums, when the file has them: one per tensor, 8 hex digits.
  std::unordered_map<std::string, std::string> checksums;
  const auto sums = out.metadata.find(kChecksumMetadataKey);
  const bool has_checksums = sums != out.metadata.end();
  if (has_checksums) {
    ordered_json parsed;
    try {
      parsed = parse_ordered_json(sums->second, std::string("metadata '") + kChecksumMetadataKey + "'");
    } catch (const IoError& e) {
      fail(path, std::string(e.what()) + " (damaged file?)");
    }
    if (!parsed.is_object()) fail(path, std::string("metadata '") + kChecksumMetadataKey + "' is not a JSON object");
    for (auto it = parsed.begin(); it != parsed.end(); ++it) {
      if (!it.value().is_string()) fail(path, "checksum of tensor " + qname(it.key()) + " is not a string");
      checksums[it.key()] = it.value().get<std::string>();
    }
    for (const Entry& e : entries)
      if (!checksums.count(e.name)) fail(path, "tensor " + qname(e.name) + " has no checksum (damaged header?)");
    if (checksums.size() != entries.size())
      for (const auto& named_sum : checksums) {
        const std::string& name = named_sum.first;  // not a structured binding: clang 15 cannot capture one
        if (std::none_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; }))
          fail(path, "a checksum names tensor " + qname(name) + ", which the file does not hold (damaged header?)");
      }
    out.metadata.erase(kChecksumMetadataKey);
  }

  // Read each tensor straight into its (pooled) storage.
  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(Shape(e.dims), e.dtype);
    void* dst = e.dtype == DType::f32 ? static_cast<void*>(t.f32()) : static_cast<void*>(t.i32());
    if (e.end > e.begin && !read_exact(fd.fd, dst, static_cast<size_t>(e.end - e.begin), data_start + e.begin, error))
      fail(path, "cannot read tensor " + qname(e.name) + ": " +
                     (error ? errno_text(error) : std::string("unexpected end of file (file changed while reading?)")));
    if (has_checksums) {
      const std::string sum = crc32_hex(dst, static_cast<size_t>(e.end - e.begin));
      if (sum != checksums[e.name])
        fail(path, "tensor " + qname(e.name) + " is damaged: its bytes have CRC-32 " + sum + ", the file recorded " +
                       printable(checksums[e.name], true, 20));
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  out.verified = has_checksums;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------- loading

SafetensorsFile load_safetensors(const std::string& path) {
  try {
    return load_impl(path);
  } catch (const IoError&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    // Any JSON access we did not foresee still becomes a clean one-line error.
    fail(path, std::string("malformed header: ") + printable(e.what(), true, 200));
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory while loading");
  } catch (const Error& e) {
    fail(path, printable(e.what(), true, 200));
  } catch (const std::exception& e) {
    fail(path, std::string("cannot load: ") + printable(e.what(), true, 200));
  }
}

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

const Tensor& SafetensorsFile::at(const std::string& name) const {
  const Tensor* t = find(name);
  if (t == nullptr) fail(path, "no tensor " + qname(name));
  return *t;
}

SafetensorsFile SafetensorsFile::subset(const std::string& prefix) const {
  SafetensorsFile out;
  out.path = path;
  out.metadata = metadata;
  out.verified = verified;
  for (const auto& [n, t] : tensors)
    if (n.size() >= prefix.size() && n.compare(0, prefix.size(), prefix) == 0)
      out.tensors.emplace_back(n.substr(prefix.size()), t);
  return out;
}

void load_into(const SafetensorsFile& file, const std::vector<std::pair<std::string, Tensor>>& destination,
               const std::string& path_for_messages) {
  const std::string& path = path_for_messages.empty() ? file.path : path_for_messages;
  std::unordered_map<std::string, const Tensor*> in_file;
  for (const auto& [n, t] : file.tensors) in_file.emplace(n, &t);
  std::unordered_set<std::string> wanted;
  for (const auto& [n, t] : destination) {
    if (!t.defined()) throw ValueError("load_into: destination tensor " + qname(n) + " is undefined");
    if (!wanted.insert(n).second) throw ValueError("load_into: destination name " + qname(n) + " appears twice");
  }
  std::vector<std::string> problems;
  for (const auto& [n, t] : destination) {
    auto it = in_file.find(n);
    if (it == in_file.end()) {
      problems.push_back("missing tensor " + qname(n) + " " + t.shape().str() + " " + dtype_name(t.dtype()));
      continue;
    }
    const Tensor& src = *it->second;
    if (src.shape() != t.shape() || src.dtype() != t.dtype())
      problems.push_back("tensor " + qname(n) + " expected " + t.shape().str() + " " + dtype_name(t.dtype()) +
                         ", file has " + src.shape().str() + " " + dtype_name(src.dtype()));
  }
  for (const auto& [n, t] : file.tensors)
    if (!wanted.count(n)) problems.push_back("unexpected tensor " + qname(n) + " " + t.shape().str());
  if (!problems.empty()) {
    constexpr size_t kShown = 6;
    std::string msg = "cannot load: ";
    for (size_t i = 0; i < problems.size() && i < kShown; ++i) msg += (i ? "; " : "") + problems[i];
    if (problems.size() > kShown) msg += "; and " + std::to_string(problems.size() - kShown) + " more problems";
    fail(path, msg);
  }
  for (const auto& [n, t] : destination) {
    Tensor dst = t;
    dst.copy_from(*in_file.at(n));
  }
}

// ---------------------------------------------------------------------------- saving

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Arguments first: nothing touches the disk unless they are good.
  std::unordered_set<std::string> names;
  for (const auto& [n, t] : tensors) {
    if (n.empty()) throw ValueError("save_safetensors: empty tensor name");
    if (n == "__metadata__") throw ValueError("save_safetensors: '__metadata__' cannot be a tensor name");
    if (!names.insert(n).second) throw ValueError("save_safetensors: tensor name " + qname(n) + " appears twice");
    if (!t.defined()) throw ValueError("save_safetensors: tensor " + qname(n) + " is undefined");
  }
  if (metadata.count(kChecksumMetadataKey))
    throw ValueError(std::string("save_safetensors: metadata key '") + kChecksumMetadataKey + "' is attn's own");
  ordered_json checksums = ordered_json::object();
  for (const auto& [n, t] : tensors) checksums[n] = crc32_hex(tensor_bytes(t), static_cast<size_t>(t.numel()) * 4);
  ordered_json header = ordered_json::object();
  ordered_json meta = ordered_json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta[kChecksumMetadataKey] = checksums.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  header["__metadata__"] = std::move(meta);
  uint64_t offset = 0;
  for (const auto& [n, t] : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * 4;
    header[n] = {
        {"dtype", st_dtype(t.dtype())}, {"shape", t.shape().dims()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, ordered_json::error_handler_t::strict);
  } catch (const nlohmann::json::exception&) {
    throw ValueError("save_safetensors: a tensor name or metadata string is not valid UTF-8");
  }
  // Pad with spaces so the data buffer starts at a multiple of 8.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  AtomicFile file(path);
  file.write(len_bytes, 8);
  file.write(text);
  for (const auto& [n, t] : tensors) {
    if (t.numel() == 0) continue;
    file.write(tensor_bytes(t), static_cast<size_t>(t.numel()) * 4);
  }
  file.commit();
}

}  // namespace attn::io
