"""Builds libllama with CMake and places it inside the llama_py package.

Works for `pip install .` (into the wheel) and `pip install -e .` (into the source tree).
"""
import os
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
        extra = os.environ.get("LLAMA_CMAKE_ARGS", "")
        args += extra.split() if extra else []
        subprocess.check_call([cmake_executable()] + args)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call([cmake_executable(), "--build", build_dir, "--target", "llama", "-j", jobs])
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


setup(ext_modules=[CMakeLibrary("llama_py.libllama")], cmdclass={"build_ext": CMakeBuild})
