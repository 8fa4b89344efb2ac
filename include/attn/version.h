#pragma once
// What this build of attn is: written into the build by cmake/build_info.cmake at every build.

namespace attn {

const char* version();  // "0.1.0" (CMakeLists.txt's project version)
// The git commit built, "f8cc27b1c2d3", with "-modified" when the sources (src, include, tools,
// python, CMake files) differed from it; "unknown" outside a git checkout (a tarball).
const char* build_commit();
const char* sentencepiece_version();  // from pkg-config at configure time; "unknown" when it gave none

}  // namespace attn
