"""Builds libllama (and, when an NVIDIA driver and nvcc are found, libggml-cuda: cmake/cuda.cmake)
with CMake and places them inside the llama_py package. pip shows the build's lines with -v.

Works for `pip install .` (into the wheel) and `pip install -e .` (into the source tree).
CMake options come from CMAKE_ARGS (llama-cpp-python's convention, e.g.
CMAKE_ARGS="-DLLAMA_CUDA=ON") and LLAMA_CMAKE_ARGS, in that order.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmake_executable():
    """The `cmake` PyPI package's binary when installed (pyenv shims may not see it yet), else PATH's."""
    try:
        import cmake
        exe = os.path.join(cmake.CMAKE_BIN_DIR, "cmake")
        if os.path.isfile(exe):
            return exe
    except (ImportError, AttributeError):
        pass
    return shutil.which("cmake") or "cmake"


def cuda_enabled(build_dir):
    """True if the configured build makes libggml-cuda (cmake/cuda.cmake sets LLAMA_CUDA_ENABLED)."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            return re.search(r"^LLAMA_CUDA_ENABLED:INTERNAL=ON$", f.read(), re.M) is not None
    except OSError:
        return False


class CMakeLibrary(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def run(self):
        for ext in self.extensions:
            self.build_cmake(ext)

    def build_cmake(self, ext):
        build_dir = os.path.join(ROOT, "build", "py")
        os.makedirs(build_dir, exist_ok=True)
        args = ["-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release"]
        for var in ("CMAKE_ARGS", "LLAMA_CMAKE_ARGS"):
            args += shlex.split(os.environ.get(var, ""))
        print("llama_py: configuring with CMake (CMAKE_ARGS / LLAMA_CMAKE_ARGS add options; "
              "pip install -v shows each step)", flush=True)
        subprocess.check_call([cmake_executable()] + args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        targets = ["llama"]
        if cuda_enabled(build_dir):
            targets.append("ggml-cuda")
            print("llama_py: building libllama and the CUDA backend libggml-cuda: nvcc takes minutes per GPU "
                  "architecture (CMAKE_ARGS=-DLLAMA_CUDA=OFF skips it)", flush=True)
        else:
            print("llama_py: building libllama for the CPU (1-2 minutes on 2 cores)", flush=True)
        # one build call for both targets, so that make prints one running percentage
        subprocess.check_call([cmake_executable(), "--build", build_dir, "-j", jobs, "--target", *targets])
        libname = {"win32": "llama.dll", "darwin": "libllama.dylib"}.get(sys.platform, "libllama.so")
        built = None
        for dirpath, _, files in os.walk(build_dir):
            if libname in files:
                built = os.path.join(dirpath, libname)
                break
        if built is None:
            raise RuntimeError(f"CMake did not produce {libname}")
        dest_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copy2(built, os.path.join(dest_dir, libname))
        # the CUDA backend goes next to libllama (ggml_backend_load_all looks there); a stale
        # copy from an earlier CUDA build is removed when this build has none
        cuda_dest = os.path.join(dest_dir, "libggml-cuda.so")
        if "ggml-cuda" in targets:
            shutil.copy2(os.path.join(os.path.dirname(built), "libggml-cuda.so"), cuda_dest)
        elif os.path.exists(cuda_dest):
            os.remove(cuda_dest)


setup(ext_modules=[CMakeLibrary("llama_py.libllama")], cmdclass={"build_ext": CMakeBuild})
