"""lm-evaluation-harness's log-likelihood scoring of one model three ways, on a local task file
(scripts/lm_eval_task: 32 facts, 4 choices each):

  - "server":     lm-eval's `gguf` model (llama-cpp-python's server API: /v1/completions with
                  echo, logprobs, max_tokens 1) against `python -m llama_py serve`;
  - "in-process": the same requests made on llama_py.Llama.create_completion(echo=True);
  - "hf":         lm-eval's `hf` model on transformers with the GGUF's weights dequantized
                  (transformers' gguf_file loader): an independent reference;
  - "peer":       with --peer-server URL, the `gguf` model against llama.cpp's llama-server
                  (its /v1/completions refuses echo: "Only no echo is supported").

Prints acc / acc_norm of each and the largest per-choice log-likelihood difference from hf.

    pip install lm-eval==0.4.13
    python scripts/lm_eval_compare.py [--model SmolLM2.gguf] [--peer-server http://127.0.0.1:8081]
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASK = "llama_py_facts"


def _task_dir() -> str:
    """A folder with the task's YAML pointing at the data file by absolute path."""
    d = tempfile.mkdtemp(prefix="lm_eval_task_")
    text = (HERE / "lm_eval_task" / "facts.yaml").read_text()
    Path(d, "facts.yaml").write_text(text.replace("test: facts.jsonl", f"test: {HERE / 'lm_eval_task' / 'facts.jsonl'}"))
    return d


def _evaluate(lm, task_dir: str):
    import lm_eval
    from lm_eval.tasks import TaskManager
    r = lm_eval.simple_evaluate(model=lm, tasks=[TASK], task_manager=TaskManager(include_path=task_dir),
                                log_samples=True, bootstrap_iters=0)
    res = r["results"][TASK]
    samples = sorted(r["samples"][TASK], key=lambda s: s["doc_id"])
    lls = [float(resp[0][0]) for s in samples for resp in s["resps"]]
    return res["acc,none"], res["acc_norm,none"], lls


def _in_process_lm(model_path: str):
    from lm_eval.api.model import LM
    from lm_eval.models.gguf import get_result
    from llama_py import Llama

    class InProcess(LM):
        """The gguf model's requests, made on llama_py.Llama in this process."""

        def __init__(self):
            super().__init__()
            self.llm = Llama(model_path, n_ctx=2048, verbose=False, flash_attn=True)

        def loglikelihood(self, requests, disable_tqdm=False):
            out = []
            for context, continuation in [r.args for r in requests]:
                c = self.llm.create_completion(context + continuation, echo=True, logprobs=10, max_tokens=1,
                                               temperature=0)
                out.append(get_result(c["choices"][0]["logprobs"], len(context)))
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def generate_until(self, requests, disable_tqdm=False):
            raise NotImplementedError
    return InProcess()


def _serve(model_path: str):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([sys.executable, "-m", "llama_py", "serve", "-m", model_path, "--port", str(port),
                             "-np", "1", "-c", "2048"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    import urllib.request
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start: " + proc.stderr.read().decode()[-2000:])
            time.sleep(0.3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="GGUF file (default: the SmolLM2 demo model)")
    ap.add_argument("--peer-server", default=None, help="base URL of a llama.cpp llama-server on the same model")
    ap.add_argument("--no-hf", action="store_true", help="skip the transformers reference")
    args = ap.parse_args()
    from llama_py.pull import resolve_model
    model = resolve_model(args.model, quiet=True)
    task_dir = _task_dir()
    from lm_eval.models.gguf import GGUFLM
    rows = {}
    proc, url = _serve(model)
    try:
        rows["server"] = _evaluate(GGUFLM(base_url=url), task_dir)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    rows["in-process"] = _evaluate(_in_process_lm(model), task_dir)
    if not args.no_hf:
        from lm_eval.models.huggingface import HFLM
        from transformers import AutoModelForCausalLM, AutoTokenizer
        d, f = os.path.split(os.path.abspath(model))
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        hf = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype="float32").eval()
        rows["hf (dequantized GGUF)"] = _evaluate(HFLM(pretrained=hf, tokenizer=tok, batch_size=8), task_dir)
    if args.peer_server:
        try:
            rows["peer llama-server"] = _evaluate(GGUFLM(base_url=args.peer_server), task_dir)
        except Exception as e:  # llama-server refuses echo
            print(f"peer llama-server: {type(e).__name__}: {e}")
    import numpy as np
    ref = np.array(rows.get("hf (dequantized GGUF)", rows["in-process"])[2])
    inp = np.array(rows["in-process"][2])
    print(f"{len(ref)} choices scored; log-likelihood differences per choice (nats)")
    print(f"{'run':24} {'acc':>7} {'acc_norm':>9} {'median|d| vs hf':>16} {'max|d| vs hf':>13} {'max|d| vs in-proc':>18}")
    for name, (acc, acc_norm, lls) in rows.items():
        d = np.abs(np.array(lls) - ref)
        print(f"{name:24} {acc:7.4f} {acc_norm:9.4f} {np.median(d):16.2e} {d.max():13.2e} "
              f"{np.abs(np.array(lls) - inp).max():18.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
