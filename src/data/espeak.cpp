// espeak-ng as a subprocess (attn/data/espeak.h). The text reaches it through a memory file
// (memfd) as its standard input, and its messages go to another: only its standard output is a
// pipe, read to the end, so no write can block or raise SIGPIPE.
#include "attn/data/espeak.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "attn/error.h"
#include "attn/printable.h"

extern char** environ;

namespace attn::data {
namespace {

const char* const kProgram = "espeak-ng";
const char* const kMissing = "espeak-ng not found; install the Debian package espeak-ng (scripts/install-deps.sh does)";

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& what, int error) {
  throw IoError("espeak-ng: " + what + ": " + std::strerror(error));
}

// An anonymous file holding `text`, positioned at its start.
int memory_file(const std::string& text) {
  const int fd = ::memfd_create("attn-espeak", MFD_CLOEXEC);
  if (fd < 0) fail("cannot make a memory file", errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const int error = errno;
      ::close(fd);
      fail("cannot write its input", error);
    }
    done += static_cast<size_t>(put);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("cannot read its output", errno);
    if (got == 0) return out;
    out.append(buffer, static_cast<size_t>(got));
  }
}

// Runs espeak-ng with `args` and `input` on its standard input; its standard output.
std::string run(const std::vector<std::string>& args, const std::string& input) {
  Fd in{memory_file(input)}, err{memory_file("")};
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) fail("cannot make a pipe", errno);
  Fd out_read{pipe_fds[0]}, out_write{pipe_fds[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd, 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, out_write.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd, 2);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kProgram));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, kProgram, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) throw IoError(kMissing);
  if (spawned != 0) fail("cannot start it", spawned);
  ::close(out_write.fd);
  out_write.fd = -1;
  std::string output;
  try {
    output = read_all(out_read.fd);
  } catch (...) {
    ::waitpid(pid, nullptr, 0);
    throw;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail("cannot wait for it", errno);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::lseek(err.fd, 0, SEEK_SET);
    std::string message = read_all(err.fd);
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
    const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                              : "was killed by signal " + std::to_string(WTERMSIG(status));
    throw IoError("espeak-ng " + how + (message.empty() ? "" : ": " + printable(message, false, 300)));
  }
  return output;
}

}  // namespace

std::string espeak_wav(const std::string& text, const EspeakVoice& voice) {
  try {
    return run(
        {"--stdout", "--stdin", "-v", voice.voice, "-s", std::to_string(voice.rate), "-p", std::to_string(voice.pitch)},
        text);
  } catch (const IoError& e) {
    if (std::string(e.what()) == kMissing) throw;
    throw IoError(std::string(e.what()) + " (voice " + printable(voice.voice, false, 80) + ")");
  }
}

std::string espeak_version() {
  std::string line = run({"--version"}, "");
  if (const size_t cut = line.find("  Data at:"); cut != std::string::npos) line.resize(cut);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace attn::data
