"""The CUDA backend (libggml-cuda.so).

Without a GPU (CI, most machines) only the fallback runs: with the library built, loading it
logs one line naming why CUDA is off, llama_supports_gpu_offload() is False and a model asked
to offload runs on the CPU. Everything else skips with "no CUDA device (...reason...)".

With a GPU: every case of test_ggml_ops' op table (each type and input layout) computed on the
CUDA device against the same NumPy reference at the case's tolerances (loosened where the
device rounds differently, said per op below) and against the CPU backend's own result; then
SmolLM2 (Q4_1 and a Q8_0 requantization) fully and partly offloaded, fed the CPU's greedy
tokens: the prompt's and every decoding step's logits within twice the CPU's own spread
between two of its float orders (see _ALT_CPU) of the CPU's, clear greedy choices identical;
state save/load across placements, several sequences in one batch, decode graphs captured and
replayed, out-of-memory as an error.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_ggml_ops as OPS  # noqa: E402
from model_util import Ctx, LogCapture, Model, tokens_of  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402
from llama_py import ggml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CUDA_LIB = "libggml-cuda.so"
N_LAYER = 30  # SmolLM2-135M
PROMPT = "The capital of France is Paris, and the capital of Italy is"

_PROBE = r"""
import sys
from llama_py import ggml
import llama_py.llama_cpp as L
with ggml.capture_log() as lines:
    ggml.ggml_backend_load_all()
    gpu = L.llama_supports_gpu_offload()
for level, text in lines:
    if "cuda" in text.lower():  # the backend's lines and any naming libggml-cuda.so
        print("LOG", text.strip())
print("GPU", int(gpu))
print("CUDA_REG", int(bool(ggml.ggml_backend_reg_by_name(b"CUDA"))))
"""


def _probe():
    """Runs the loading in a fresh process (ggml_backend_load_all tries a library once per
    process): its CUDA log lines, whether offload is possible, whether CUDA registered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"loading the backends crashed (rc {out.returncode}): {out.stderr[-2000:]}"
    logs = [ln[4:] for ln in out.stdout.splitlines() if ln.startswith("LOG ")]
    gpu = any(ln == "GPU 1" for ln in out.stdout.splitlines())
    reg = any(ln == "CUDA_REG 1" for ln in out.stdout.splitlines())
    return logs, gpu, reg


@pytest.fixture(scope="session")
def cuda_lib(lib_path) -> Path:
    """libggml-cuda.so next to the loaded libllama, or a skip saying it was not built."""
    p = lib_path.parent / CUDA_LIB
    if not p.is_file():
        pytest.skip(f"no CUDA device ({CUDA_LIB} not built next to {lib_path.name}: no NVIDIA driver or CUDA "
                    f"toolkit at build time (LLAMA_CUDA=AUTO; -DLLAMA_CUDA=ON forces it), or -DLLAMA_CUDA=OFF)")
    return p


@pytest.fixture(scope="session")
def probe(cuda_lib):
    return _probe()


@pytest.fixture(scope="session")
def cuda_dev(probe):
    """The first CUDA device, or a skip naming why there is none."""
    logs, gpu, reg = probe
    if not gpu or not reg:
        reason = next((ln for ln in logs if "backend off" in ln), "llama_supports_gpu_offload() is False")
        pytest.skip(f"no CUDA device ({reason})")
    ggml.ggml_backend_load_all()
    dev = ggml.ggml_backend_dev_by_name(b"CUDA0")
    assert dev, "CUDA registered in a fresh process but not here"
    return dev


# ---- runs without a GPU ----

def test_llama_says_cuda_is_off_in_one_line_and_only_when_verbose(cuda_lib, probe, smollm2_path):
    """Llama(verbose=True) on a machine without a usable GPU: one line about CUDA; quiet without verbose."""
    if probe[1]:
        pytest.skip("a CUDA device is present: the fallback path does not run here")
    code = ("import sys\nfrom llama_py.llama import Llama\n"
            f"Llama({str(smollm2_path)!r}, n_ctx=64, verbose=sys.argv[1] == '1').close()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), LLAMA_PY_LIB=str(cuda_lib.parent / "libllama.so"))
    for verbose, n in (("1", 1), ("0", 0)):
        out = subprocess.run([sys.executable, "-c", code, verbose], env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        lines = [ln for ln in out.stderr.splitlines() if "cuda" in ln.lower()]
        assert len(lines) == n, (verbose, lines)


def test_no_driver_is_one_log_line_and_cpu(probe, smollm2_path):
    """With the library present and no usable driver/device: one 'backend off' line, no CUDA
    registry, no GPU offload; a model asked for n_gpu_layers=999 runs on the CPU."""
    logs, gpu, reg = probe
    if gpu:
        pytest.skip("a CUDA device is present: the fallback path does not run here")
    off = [ln for ln in logs if ln.startswith("CUDA: backend off")]
    assert len(off) == 1 and len(logs) == 1, logs  # one line in all, naming why
    assert not reg
    ggml.ggml_backend_load_all()
    assert not L.llama_supports_gpu_offload()
    with LogCapture() as log, Model(smollm2_path, n_gpu_layers=999) as m, Ctx(m, n_ctx=64) as c:
        toks = tokens_of(m, "Hi there")
        assert c.decode_seq(toks) == 0
        assert np.isfinite(c.logits(-1)).all()
    assert "offloaded" not in log.text()


def test_library_links_only_driver_side_runtime(cuda_lib):
    """The installed package needs only the driver: no libcudart / libcublas dependency."""
    out = subprocess.run(["readelf", "-d", str(cuda_lib)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("readelf is not available")
    needed = [ln for ln in out.stdout.splitlines() if "NEEDED" in ln]
    assert needed and not any("libcudart" in ln or "libcublas" in ln for ln in needed), needed
    assert "$ORIGIN" in out.stdout


# ---- ops on the device (a GPU is needed from here on) ----

# The device follows the CPU's roundings (quantized weights: activations quantized to the same
# Q8 blocks; F16 weights: b rounded to F16), so every case keeps test_ggml_ops' tolerance
# against NumPy, except where a device reduction order adds a little (listed here).
CUDA_TOL = {
    "flash_attn_vec": {OPS.F32: (2e-5, 1e-4), OPS.F16: (2e-3, 1e-3)},
}

OP_PARAMS = [pytest.param(c, t, lay, id=f"{c.name}-{OPS.TYPE_NAMES[t]}-{lay}")
             for c in OPS.CASES for t in c.types
             for lay in (c.layouts if t in (OPS.F32, OPS.F16) else c.quant_layouts)]

ARENA = 64 * 1024 * 1024


def _run_on_device(dev, ctx, arena, snapshot, gf, check):
    """Mirrors the whole arena (tensors keep their offsets) into one device buffer, computes gf
    on the device, and returns check's bytes as the device left them (arena restored)."""
    be = ggml.ggml_backend_dev_init(dev, None)
    assert be
    buf = ggml.ggml_backend_buft_alloc_buffer(ggml.ggml_backend_dev_buffer_type(dev), arena.nbytes)
    assert buf
    mctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=4 * ggml.ggml_tensor_overhead(), mem_buffer=None, no_alloc=True))
    host0 = arena.ctypes.data
    moved = []
    try:
        dev0 = ggml.ggml_backend_buffer_get_base(buf)
        whole = ggml.ggml_new_tensor_1d(mctx, ggml.GGML_TYPE_I8, arena.nbytes)
        assert ggml.ggml_backend_tensor_alloc(buf, whole, dev0) == ggml.GGML_STATUS_SUCCESS
        ggml.ggml_backend_tensor_set(whole, snapshot.ctypes.data, 0, arena.nbytes)
        t = ggml.ggml_get_first_tensor(ctx)
        while t:
            s = ggml.tensor_struct(t)
            if s.data:
                off = s.data - host0
                assert 0 <= off < arena.nbytes, "a tensor's data lies outside the arena"
                moved.append((s, off))
                s.data = dev0 + off
                s.buffer = buf
            t = ggml.ggml_get_next_tensor(ctx, t)
        st = ggml.ggml_backend_graph_compute(be, gf)
        out = np.empty_like(arena)
        ggml.ggml_backend_tensor_get(whole, out.ctypes.data, 0, arena.nbytes)
    finally:
        for s, off in moved:
            s.data = host0 + off
            s.buffer = None
        ggml.ggml_free(mctx)
        ggml.ggml_backend_buffer_free(buf)
        ggml.ggml_backend_free(be)
    assert st == ggml.GGML_STATUS_SUCCESS, "graph_compute on CUDA failed (see the log)"
    cs = ggml.tensor_struct(check)
    off = cs.data - host0
    n = ggml.ggml_nbytes(check)
    arena[off:off + n] = out[off:off + n]


def _check_op_on(dev, case, type, layout):
    arena = np.zeros(ARENA, dtype=np.uint8)
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=ARENA, mem_buffer=arena.ctypes.data, no_alloc=False))
    assert ctx
    try:
        rng = np.random.default_rng(zlib.crc32(f"{case.name}-{type}-{layout}".encode()))
        built = case.build(ctx, rng, type, layout)
        node, expected = built[0], built[1]
        check = built[2] if len(built) > 2 and built[2] is not None else node
        assert node
        assert ggml.ggml_backend_dev_supports_op(dev, node), f"{case.name}: {ggml.ggml_backend_dev_name(dev)} does not support this node"
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, node)
        snapshot = arena.copy()
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, 2) == ggml.GGML_STATUS_SUCCESS
        cpu = OPS.val(check).copy()
        arena[...] = snapshot
        _run_on_device(dev, ctx, arena, snapshot, gf, check)
        got = OPS.val(check)
        ctype = ggml.tensor_struct(check).type
        expected = OPS.round_to(ctype, np.asarray(expected, dtype=np.float64).reshape(got.shape))
        atol, rtol = CUDA_TOL.get(case.name, case.tol).get(type, OPS.DEFAULT_TOL.get(type, (1e-5, 1e-5)))
        assert np.array_equal(np.isnan(got), np.isnan(expected)), f"{case.name}: NaN pattern differs from NumPy"
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol, err_msg=f"CUDA vs NumPy: {case.name}")
        # against the CPU backend: twice the tolerance (each side is within it of the reference)
        np.testing.assert_allclose(got, cpu, atol=2 * atol, rtol=2 * rtol, err_msg=f"CUDA vs CPU: {case.name}")
    finally:
        ggml.ggml_free(ctx)


@pytest.mark.parametrize("case,type,layout", OP_PARAMS)
def test_op_on_cuda(cuda_dev, case, type, layout):
    _check_op_on(cuda_dev, case, type, layout)


HARNESS_CASES = ["add_inplace", "rope_yarn_neox", "mul_mat", "flash_attn_mask_view", "cpy_from", "set_rows_i64"]


@pytest.mark.parametrize("name", HARNESS_CASES)
def test_device_harness_on_test_device(name):
    """The arena-mirroring harness of test_op_on_cuda, run on the built-in test device (separate
    memory, CPU kernels) so that it is known to work before a GPU runs it."""
    case = next(c for c in OPS.CASES if c.name == name)
    ggml.ggml_backend_test_device_enable(True)
    try:
        dev = ggml.ggml_backend_dev_by_name(b"TestDevice0")
        assert dev
        for type in case.types[:2]:
            _check_op_on(dev, case, type, "perm" if "perm" in case.layouts and type in (OPS.F32, OPS.F16) else "cont")
    finally:
        ggml.ggml_backend_test_device_enable(False)


# ---- matrix products of every weight type ----

MM_TYPES = ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
            "IQ4_NL", "IQ4_XS", "MXFP4"]


def _quantize_with_library(t: int, x: np.ndarray) -> np.ndarray:
    """x (float32 rows) quantized by the library's reference quantizer (its bytes)."""
    import test_quants as Q
    from llama_py import _lib
    return Q.c_quantize(_lib.load_library(), t, x)


@pytest.mark.parametrize("n_cols", [1, 3, 8, 9, 40])
@pytest.mark.parametrize("tname", MM_TYPES)
def test_mul_mat_every_type_on_cuda(cuda_dev, tname, n_cols):
    _check_mm_on(cuda_dev, tname, n_cols)


@pytest.mark.parametrize("tname", ["F32", "BF16", "Q4_1", "Q5_0", "Q6_K"])
def test_mul_mat_harness_on_test_device(tname):
    """The harness of test_mul_mat_every_type_on_cuda on the built-in test device."""
    ggml.ggml_backend_test_device_enable(True)
    try:
        dev = ggml.ggml_backend_dev_by_name(b"TestDevice0")
        for n_cols in (1, 9):
            _check_mm_on(dev, tname, n_cols)
    finally:
        ggml.ggml_backend_test_device_enable(False)


# The activation blocks each weight type's dot products quantize b to (the CPU's vec_dot_type):
# values per block, rounding, whether d is stored as F16. Float weights use b as it is.
_ACT_BLOCKS = {"Q4_0": (32, "away", True), "Q5_0": (32, "away", True), "Q8_0": (32, "away", True),
               "Q4_1": (32, "away", False), "Q5_1": (32, "away", False), "Q4_K": (32, "away", False),
               "Q5_K": (32, "away", False), "Q6_K": (32, "away", False),
               "Q2_K": (256, "even", False), "Q3_K": (256, "even", False),
               "IQ4_NL": (32, "away", True), "IQ4_XS": (32, "away", True), "MXFP4": (32, "away", True)}


def _act_rounded(bv: np.ndarray, tname: str) -> np.ndarray:
    """b as the dot products see it: quantized to int8 per block (d = amax / 127, q = round(x / d)
    (half away from zero for Q8_0 / Q8_1, to even for Q8_K), value q * d, d rounded to F16 for
    Q8_0), in NumPy from the formats' definitions."""
    if tname not in _ACT_BLOCKS:
        return bv
    qk, rounding, d_f16 = _ACT_BLOCKS[tname]
    x = bv.astype(np.float32).reshape(*bv.shape[:-1], -1, qk)
    amax = np.abs(x).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        if rounding == "away":
            d = amax / np.float32(127)
            v = x * np.where(d != 0, np.float32(1) / d, np.float32(0))
            q = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
        else:
            iscale = np.where(amax != 0, np.float32(127) / amax, np.float32(0))
            q = np.clip(np.rint(iscale * x), -127, 127)
            d = np.where(iscale != 0, np.float32(1) / iscale, np.float32(0))
    if d_f16:
        d = d.astype(np.float16)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(bv.shape)


@pytest.mark.parametrize("n_cols", [1, 9])
def test_mul_mat_q8_0_f32_precision_on_cuda(cuda_dev, n_cols):
    """Q8_0 weights of a node asking for F32 precision (the lm head) meet 16-bit activations on
    the device as on the CPU: against NumPy with b unrounded (16 bits per 32 values lose ~1e-4
    here) and against the CPU within float-order rounding."""
    _check_mm_on(cuda_dev, "Q8_0", n_cols, prec_f32=True)


def _check_mm_on(dev, tname, n_cols, prec_f32=False):
    """a [512, 67, 2] of the type (the library's quantizer; expected values dequantized by
    gguf.quants), b F32 [512, n_cols, 4] permuted in memory: up to 8 columns take the
    matrix-vector kernels, more the batched ones. Against NumPy with b rounded as the weight
    type's dot products round it (_act_rounded: the same float32 operations, so the same int8
    values) and against the CPU, both within float-order rounding (1e-3; the CPU meets the
    NumPy reference within 1e-5 for every type here)."""
    import gguf
    t = int(getattr(ggml, f"GGML_TYPE_{tname}"))
    K, M, A2, B2 = 512, 67, 2, 4
    arena = np.zeros(ARENA, dtype=np.uint8)
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=ARENA, mem_buffer=arena.ctypes.data, no_alloc=False))
    try:
        rng = np.random.default_rng(zlib.crc32(f"mm-{tname}-{n_cols}".encode()))
        w = rng.uniform(-1, 1, (A2 * M, K)).astype(np.float32)
        a = ggml.ggml_new_tensor_3d(ctx, t, K, M, A2)
        raw = _quantize_with_library(t, w)
        assert raw.nbytes == ggml.ggml_nbytes(a)
        ctypes.memmove(ggml.tensor_struct(a).data, raw.ctypes.data, raw.nbytes)
        qt = gguf.GGMLQuantizationType[tname]
        wv = gguf.quants.dequantize(raw.reshape(A2 * M, -1), qt).reshape(A2, M, K).astype(np.float64)
        b = OPS.inp(ctx, rng.uniform(-1, 1, (B2, n_cols, K)), OPS.F32, "perm")
        bv = OPS.val(b)[0] if prec_f32 else _act_rounded(OPS.val(b)[0], tname)
        ref = np.stack([bv[i] @ wv[i // (B2 // A2)].T for i in range(B2)])[None]
        if prec_f32:   # the CPU's F32-precision path takes 2D weights and activations
            a = ggml.ggml_view_2d(ctx, a, K, M, ggml.tensor_struct(a).nb[1], 0)
            b = OPS.inp(ctx, OPS.val(b)[0][0], OPS.F32, "cont")
            ref = ref[:, :1]
        node = ggml.ggml_mul_mat(ctx, a, b)
        if prec_f32:
            ggml.ggml_mul_mat_set_prec(node, ggml.GGML_PREC_F32)
        assert ggml.ggml_backend_dev_supports_op(dev, node)
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, node)
        snapshot = arena.copy()
        assert ggml.ggml_graph_compute_with_ctx(ctx, gf, 2) == ggml.GGML_STATUS_SUCCESS
        cpu = OPS.val(node).copy()
        arena[...] = snapshot
        _run_on_device(dev, ctx, arena, snapshot, gf, node)
        got = OPS.val(node)
        np.testing.assert_allclose(got, ref.reshape(got.shape), atol=1e-3, rtol=1e-4, err_msg=f"{tname}: CUDA vs NumPy")
        np.testing.assert_allclose(got, cpu, atol=1e-3, rtol=1e-4, err_msg=f"{tname}: CUDA vs CPU")
    finally:
        ggml.ggml_free(ctx)


# ---- models ----

@pytest.fixture(scope="session")
def smollm2_q8_0(smollm2_path, tmp_path_factory, cuda_dev):
    """SmolLM2 requantized to Q8_0 by the library's quantizer (its own tests check it)."""
    out = tmp_path_factory.mktemp("cuda") / "smollm2-q8_0.gguf"
    p = L.llama_model_quantize_default_params()
    p.ftype = L.LLAMA_FTYPE_MOSTLY_Q8_0
    p.allow_requantize = True
    if L.llama_model_quantize(str(smollm2_path).encode(), str(out).encode(), ctypes.byref(p)) != 0:
        pytest.skip("requantizing SmolLM2 to Q8_0 failed (see the log)")
    return out


def _run(path, ngl, n_gen=32, forced=None):
    """Decodes PROMPT, then n_gen tokens one at a time: the greedy ones, or the tokens of forced
    (teacher forcing: every placement then computes the same sequence, so each step's logits
    compare). Returns (logits of the prompt's tokens then of each step, tokens fed, log)."""
    with LogCapture() as log, Model(path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=256, n_batch=256) as c:
        toks = tokens_of(m, PROMPT)
        assert c.decode_seq(toks) == 0
        rows = list(c.all_logits(len(toks)))
        gen, pos = [], len(toks)
        for i in range(n_gen if forced is None else len(forced)):
            nxt = int(np.argmax(rows[-1])) if forced is None else int(forced[i])
            gen.append(nxt)
            assert c.decode_seq([nxt], start=pos) == 0
            rows.append(c.logits(-1))
            pos += 1
        return np.stack(rows), gen, log.text()


# The CPU's run of a model in its usual float order, and the same token sequence in another:
# a fresh process with GGML_CPU_GEMM=0 (the dot kernels instead of the GEMM tiles: the same
# quantized activations and integer sums, other float sums). Quantizing activations to int8
# turns any float-order difference into whole quantization steps where a value sits near a
# rounding boundary, and a model amplifies them layer after layer: the CPU's own two orders
# differ by ~0.1 in SmolLM2-shaped random-weight prompt logits and ~1.2 in the real SmolLM2's
# (measured; the AVX2 and portable kernel sets differ as much). The device, which sums in yet
# another order, is judged against that spread.
_ALT_CPU = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from test_cuda import _run
forced = [int(t) for t in sys.argv[4].split(",") if t]
logits, _, _ = _run(sys.argv[1], 0, forced=forced)
np.save(sys.argv[2], logits)
"""


@pytest.fixture(scope="session")
def cpu_runs(tmp_path_factory):
    """path -> (logits, greedy tokens, tolerance): the CPU's run of _run (32 greedy tokens), and
    twice the largest difference from the same sequence in the CPU's other float order (at
    least 1e-2), the device's tolerance against the CPU (cached per model)."""
    cache = {}

    def get(path):
        if str(path) not in cache:
            logits, gen, _ = _run(path, 0)
            out = tmp_path_factory.mktemp("alt") / "logits.npy"
            env = dict(os.environ, GGML_CPU_GEMM="0")
            env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
            r = subprocess.run([sys.executable, "-c", _ALT_CPU, str(path), str(out), str(Path(__file__).parent),
                                ",".join(map(str, gen))], env=env, capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-2000:]
            spread = float(np.abs(np.load(out) - logits).max())
            cache[str(path)] = (logits, gen, max(1e-2, 2 * spread))
        return cache[str(path)]
    return get


@pytest.mark.parametrize("quant", ["q4_1", "q8_0"])
@pytest.mark.parametrize("ngl", [10, N_LAYER, 999])
def test_offload_matches_cpu(cuda_dev, smollm2_path, request, cpu_runs, quant, ngl):
    """The device, fed the CPU's greedy tokens, gives the CPU's logits for the prompt and every
    decoding step within the tolerance of cpu_runs; so wherever the CPU's choice leads the
    runner-up by more than twice that, the device's greedy choice is the CPU's."""
    path = smollm2_path if quant == "q4_1" else request.getfixturevalue("smollm2_q8_0")
    base_logits, base_gen, tol = cpu_runs(path)
    logits, _, log = _run(path, ngl, forced=base_gen)
    assert f"offloaded {min(ngl, N_LAYER)} of {N_LAYER} blocks" in log
    err = np.abs(logits - base_logits).max(axis=1)
    assert err.max() <= tol, (f"n_gpu_layers={ngl} {quant}: logits differ from the CPU's by {err.max()} at row "
                              f"{int(err.argmax())} of {len(err)} (tolerance {tol})")
    n_prompt = len(base_logits) - len(base_gen)
    top2 = np.sort(base_logits[n_prompt - 1:-1], axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * tol
    picks = np.argmax(logits[n_prompt - 1:-1], axis=1)
    assert (picks[clear] == np.asarray(base_gen)[clear]).all(), f"n_gpu_layers={ngl} {quant}: a clear greedy choice differs"


def test_decode_graph_is_captured(cuda_dev, smollm2_path):
    # _run's own log (a LogCapture around it would see nothing: the inner one replaces it)
    _, _, log = _run(smollm2_path, 999, n_gen=8)
    assert "CUDA: captured a graph" in log, "decoding never replayed a CUDA graph"


def test_state_save_load_across_placements(cuda_dev, smollm2_path, cpu_runs):
    """A state saved on one placement and restored on another gives the next token's logits of
    the saving side within the CPU/device tolerance of test_offload_matches_cpu (the same
    placement: within float rounding)."""
    _, _, tol = cpu_runs(smollm2_path)
    toks, states, nexts = None, {}, {}
    for ngl in (999, 0):
        with Model(smollm2_path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=128) as c:
            toks = tokens_of(m, PROMPT)
            assert c.decode_seq(toks, all_logits=False) == 0
            n = L.llama_state_get_size(c.ptr)
            buf = (ctypes.c_uint8 * n)()
            assert L.llama_state_get_data(c.ptr, buf, n) == n
            states[ngl] = bytes(buf)
            assert c.decode_seq([42], start=len(toks)) == 0
            nexts[ngl] = c.logits(-1)
    for src, dst in ((999, 0), (0, 999), (999, 999)):
        with Model(smollm2_path, n_gpu_layers=dst) as m, Ctx(m, n_ctx=128) as c:
            data = (ctypes.c_uint8 * len(states[src])).from_buffer_copy(states[src])
            assert L.llama_state_set_data(c.ptr, data, len(data)) == len(data)
            assert c.decode_seq([42], start=len(toks)) == 0
            err = np.abs(c.logits(-1) - nexts[src]).max()
            limit = 1e-3 if src == dst else tol
            assert err <= limit, f"state {src} -> {dst}: logits differ by {err} (tolerance {limit})"


def test_several_sequences_in_one_batch(cuda_dev, smollm2_path, cpu_runs):
    _, _, tol = cpu_runs(smollm2_path)
    prompts = ["Hello, my name is", "The quick brown fox", "1, 2, 3, 4,"]
    out = {}
    for ngl in (0, 999):
        with Model(smollm2_path, n_gpu_layers=ngl) as m, Ctx(m, n_ctx=256, n_seq_max=3) as c:
            rows = []
            for s, p in enumerate(prompts):
                t = tokens_of(m, p)
                rows += [(tok, i, [s], i == len(t) - 1) for i, tok in enumerate(t)]
            assert c.decode_rows(rows) == 0
            # logits are asked by batch position: each prompt's last token
            last = [i for i, r in enumerate(rows) if r[3]]
            out[ngl] = np.stack([c.logits(i) for i in last])
            # one step for all three sequences: a 3-column batch (the matrix-vector kernels)
            nxt = [int(np.argmax(out[ngl][s])) for s in range(3)]
            lens = [len(tokens_of(m, p)) for p in prompts]
            assert c.decode_rows([(nxt[s], lens[s], [s], True) for s in range(3)]) == 0
            out[ngl] = np.concatenate([out[ngl], c.all_logits(3)])
    err = np.abs(out[0] - out[999]).max()
    assert err <= tol, f"several sequences: logits differ from the CPU's by {err} (tolerance {tol})"


def test_out_of_memory_is_an_error(cuda_dev):
    buft = ggml.ggml_backend_dev_buffer_type(cuda_dev)
    with ggml.capture_log() as lines:
        buf = ggml.ggml_backend_buft_alloc_buffer(buft, 1 << 50)
    assert not buf
    assert any("cannot allocate" in text for _, text in lines), lines
    # the device still works afterwards
    be = ggml.ggml_backend_dev_init(cuda_dev, None)
    assert be
    ggml.ggml_backend_free(be)
