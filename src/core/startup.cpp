// Executables only (pulled in by the linker option in CMakeLists.txt; a shared library such
// as the Python module cannot have a .preinit_array): the process starts with attn's OpenMP
// wait policy, see omp_wait_policy_default in attn/parallel.h.
//
// Why a re-exec: libgomp reads OMP_WAIT_POLICY in its ELF constructor, which runs before any
// static initialiser of ours. A .preinit_array function runs even earlier, but setenv() there
// is lost: glibc resets `environ` to the original array when libc initialises (measured on
// glibc 2.36). So the program executes itself once more with the variable added; that costs
// one exec (a few milliseconds) and happens only when the environment has no policy.
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "attn/parallel.h"

extern "C" void attn_startup_anchor() {}

namespace {

void start_with_wait_policy(int /*argc*/, char** argv, char** envp) {
  const char* policy = attn::omp_wait_policy_default(envp);
  if (policy == nullptr) return;
  // AT_BASE is 0 when ld.so itself was executed (`ld.so ./attn`): /proc/self/exe is then the
  // loader, not us. A setuid start (AT_SECURE) is left alone.
  if (getauxval(AT_BASE) == 0 || getauxval(AT_SECURE) != 0) return;
  size_t n = 0;
  while (envp[n]) ++n;
  char** env = static_cast<char**>(std::malloc((n + 3) * sizeof(char*)));
  if (env == nullptr) return;
  std::memcpy(env, envp, n * sizeof(char*));
  static char wait_policy[32] = "OMP_WAIT_POLICY=";
  std::strncat(wait_policy, policy, sizeof(wait_policy) - std::strlen(wait_policy) - 1);
  static char marker[64];
  std::strcpy(marker, attn::kDefaultedEnvMarker);
  std::strcat(marker, "=OMP_WAIT_POLICY");
  env[n] = wait_policy;
  env[n + 1] = marker;
  env[n + 2] = nullptr;
  execve("/proc/self/exe", argv, env);
  std::free(env);  // exec failed (no /proc): run on with libgomp's default
}

__attribute__((section(".preinit_array"), used)) void (*kStartWithWaitPolicy)(int, char**,
                                                                              char**) = start_with_wait_policy;

}  // namespace
