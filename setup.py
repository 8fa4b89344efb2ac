"""setuptools glue: the `attn._attn` extension is built by CMake, not by setuptools.

build_ext builds only the `_attn` target, in the first of:
  $ATTN_CMAKE_BUILD_DIR                     if set (configured here when it has no build.ninja);
  build/                                    the developer's build, when it was configured with
                                            -DATTN_BUILD_PYTHON=ON for this interpreter;
  build-pip/                                otherwise (Release, no tests, ccache when installed).
so a pip install after scripts/build.sh links one target instead of compiling attn again.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cmake_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(attn VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("setup.py: no 'project(attn VERSION x.y.z' in CMakeLists.txt")
    return match.group(1)


def cache_value(build_dir: Path, key: str):
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    match = re.search(rf"^{key}:[A-Z]+=(.*)$", cache.read_text(), re.M)
    return match.group(1) if match else None


def reusable(build_dir: Path) -> bool:
    """True when build_dir is a configured build of the Python module for this interpreter."""
    exe = cache_value(build_dir, "Python3_EXECUTABLE")
    return (build_dir / "build.ninja").is_file() and cache_value(build_dir, "ATTN_BUILD_PYTHON") == "ON" \
        and exe is not None and os.path.realpath(exe) == os.path.realpath(sys.executable)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = self.cmake_build_dir()
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_attn", "-j", jobs])
        built = sorted((build_dir / "python" / "attn").glob("_attn*.so"))
        if len(built) != 1:
            raise RuntimeError(f"setup.py: expected one _attn*.so in {build_dir}/python/attn, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)
        # The stub generated next to the module by the CMake build (see python/CMakeLists.txt).
        shutil.copyfile(built[0].parent / "_attn.pyi", target.parent / "_attn.pyi")

    def cmake_build_dir(self) -> Path:
        if os.environ.get("ATTN_CMAKE_BUILD_DIR"):
            build_dir = Path(os.environ["ATTN_CMAKE_BUILD_DIR"]).resolve()
        elif reusable(ROOT / "build"):
            return ROOT / "build"
        else:
            build_dir = ROOT / "build-pip"
        if not reusable(build_dir):
            args = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DATTN_BUILD_TESTS=OFF", "-DATTN_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ccache"):
                args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
            subprocess.check_call(args)
        return build_dir


setup(
    version=cmake_version(),
    packages=["attn"],
    package_dir={"attn": "python/attn"},
    package_data={"attn": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("attn._attn", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own scratch space, away from CMake's build/.
    options={"build": {"build_base": "build-pip/setuptools"}},
)
