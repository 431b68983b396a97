"""pip install ./python --no-build-isolation: builds dspack._dspack with CMake from this source tree.

The extension is compiled from the C++ sources of the checkout this folder belongs to (the
libraries are linked into it statically; nothing needs to be installed first). It needs the
libraries the formats link (scripts/deps.sh) plus pybind11-dev and python3-dev, but not the test
and FUSE stacks (Catch2, Google Benchmark, fuse3): the tests, micro-benchmarks and slow file
system are left out. It works offline with Debian's setuptools; the metadata is pyproject.toml's.
DSPACK_CMAKE_ARGS (space-separated) reaches CMake's configure step as extra arguments. On Debian 12 the system Python refuses pip (PEP 668): install into a venv
made with --system-site-packages (so Debian's torch stays visible), or use cmake --install.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DDSPACK_PYTHON=ON", "-DDSPACK_MICRO_BENCH=OFF", "-DDSPACK_TESTS=OFF",
            "-DDSPACK_SLOWFS=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
            *os.environ.get("DSPACK_CMAKE_ARGS", "").split()])
        jobs = os.environ.get("JOBS", "2")
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_dspack", "-j", jobs])
        built = next((build / "python" / "dspack").glob("_dspack*.so"))
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)


setup(
    packages=["dspack", "dspack.torch"],
    ext_modules=[Extension("dspack._dspack", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
