#!/usr/bin/env python3
"""The ISA-level kernel objects (CMakeLists.txt, ATTN_ISA_KERNELS) are safe to link into one binary.

Usage: check_symbols.py [--registers] LEVEL OBJECT... (once per level), or --self-test.

1. Every symbol an object defines outside itself (nm: not local) lies in its level's
   namespace, attn::kernels::isa_<LEVEL> (or is an instantiation for a type of it). Anything
   else, an inline function or template of a header (std::, attn::) that the compiler did not
   inline, would be merged by the linker with the other levels' and the library's copies, and
   the avx512 copy might run on a CPU without AVX-512 (SIGILL).
2. With --registers (an optimised build: -O1 does not vectorise), the code is the level's: no YMM or ZMM register at baseline, no ZMM at avx2, ZMM at avx512
   (GCC vectorises the kernels' loops to 512 bits at -march=x86-64-v4 with generic tuning).
"""
import subprocess
import sys

# Linker-generated or data-only references that carry no code of the level.
ALLOWED = {"DW.ref.__gxx_personality_v0"}


def foreign_symbols(level, nm_lines):
    """The defined, non-local symbols of `nm -C --defined-only` lines outside isa_<level>."""
    bad = []
    for line in nm_lines:
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind.islower() and kind not in ("u", "v", "w"):  # local (t, d, b, r): not merged
            continue
        if f"isa_{level}::" in name or name in ALLOWED:
            continue
        bad.append(f"{kind} {name}")
    return bad


def register_problem(level, disassembly):
    """Why the disassembly does not look like `level`'s code, or None."""
    has_ymm, has_zmm = "%ymm" in disassembly, "%zmm" in disassembly
    if level == "baseline" and (has_ymm or has_zmm):
        return "baseline code uses AVX registers"
    if level == "avx2" and has_zmm:
        return "avx2 code uses AVX-512 registers"
    if level == "avx2" and not has_ymm:
        return "avx2 code never uses a YMM register (not compiled for x86-64-v3?)"
    if level == "avx512" and not has_zmm:
        return "avx512 code never uses a ZMM register (not compiled for x86-64-v4?)"
    return None


def self_test():
    nm = ["0000000000000000 T attn::kernels::isa_avx2::softmax_forward(float const*, int const*, float*, long, long)",
          "0000000000000000 W void attn::parallel_for<attn::kernels::isa_avx2::(anonymous namespace)::f()::{lambda(long, long)#1}>(long, long, long, attn::kernels::isa_avx2::(anonymous namespace)::f()::{lambda(long, long)#1}&&)",
          "0000000000000000 t attn::kernels::isa_avx2::(anonymous namespace)::row_max(float const*, int const*, long)",
          "0000000000000000 V DW.ref.__gxx_personality_v0",
          "0000000000000000 W float const& std::max<float>(float const&, float const&)",
          "0000000000000000 T attn::kernels::isa_avx512::softmax_forward(float const*, int const*, float*, long, long)",
          "0000000000000000 W attn::splitmix64(unsigned long)"]
    bad = foreign_symbols("avx2", nm)
    assert bad == ["W float const& std::max<float>(float const&, float const&)",
                   "T attn::kernels::isa_avx512::softmax_forward(float const*, int const*, float*, long, long)",
                   "W attn::splitmix64(unsigned long)"], bad
    assert register_problem("baseline", "vmulps %ymm0,%ymm1,%ymm2") is not None
    assert register_problem("baseline", "mulps %xmm0,%xmm1") is None
    assert register_problem("avx2", "vmulps %zmm0,%zmm1,%zmm2") is not None
    assert register_problem("avx2", "vmulps %ymm0,%ymm1,%ymm2") is None
    assert register_problem("avx512", "vmulps %ymm0,%ymm1,%ymm2") is not None
    assert register_problem("avx512", "vmulps %zmm0,%zmm1,%zmm2") is None
    print("check_symbols self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    args = sys.argv[1:]
    registers = args[:1] == ["--registers"]
    if registers:
        args = args[1:]
    # CMake's $<TARGET_OBJECTS:...> arrives as one argument, the paths separated by ';'.
    level, objects = args[0], [path for arg in args[1:] for path in arg.split(";") if path]
    if not objects:
        print(f"check_symbols: no objects for level {level}", file=sys.stderr)
        return 1
    failures = 0
    code = ""
    for obj in objects:
        nm = subprocess.run(["nm", "-C", "--defined-only", obj], check=True, capture_output=True, text=True).stdout
        for symbol in foreign_symbols(level, nm.splitlines()):
            print(f"FAIL: {obj}: {symbol} lies outside attn::kernels::isa_{level}: the linker may merge it "
                  f"with another level's copy (put it in ATTN_ISA_NS, or make it static)", file=sys.stderr)
            failures += 1
        code += subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], check=True, capture_output=True,
                               text=True).stdout
    problem = register_problem(level, code) if registers else None
    if problem:
        print(f"FAIL: level {level}: {problem}", file=sys.stderr)
        failures += 1
    if failures:
        return 1
    print(f"{len(objects)} {level} objects: every exported symbol in attn::kernels::isa_{level}"
          + ("; registers as expected" if registers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
