"""Builds a small ggml graph from Python — softmax(W x + b) — computes it on 1 and 2
threads and compares each result with NumPy. Exits non-zero if they differ.

    python examples/ggml_matmul.py
"""
import sys

import numpy as np

from llama_py import ggml


def main() -> int:
    rng = np.random.default_rng(0)
    M, K, N = 6, 8, 4  # outputs, inner dimension, input columns
    w = rng.standard_normal((M, K)).astype(np.float32)  # ggml ne = [K, M]
    x = rng.standard_normal((N, K)).astype(np.float32)  # ggml ne = [K, N]
    bias = rng.standard_normal(M).astype(np.float32)    # ggml ne = [M]

    # NumPy reference: ggml_mul_mat(w, x) has ne [M, N], i.e. NumPy shape (N, M) = x @ w.T.
    logits = x @ w.T + bias
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)

    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=16 * 1024 * 1024, mem_buffer=None, no_alloc=False))
    if not ctx:
        print("ggml_init failed", file=sys.stderr)
        return 1
    try:
        tw = ggml.tensor_from_numpy(ctx, w, name="w")
        tx = ggml.tensor_from_numpy(ctx, x, name="x")
        tb = ggml.tensor_from_numpy(ctx, bias, name="b")
        y = ggml.ggml_mul_mat(ctx, tw, tx)
        y = ggml.ggml_add(ctx, y, tb)
        probs = ggml.ggml_soft_max(ctx, y)
        if not probs:
            print("building the graph failed (see the log above)", file=sys.stderr)
            return 1
        ggml.ggml_set_name(probs, b"probs")
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, probs)
        print(f"graph: {ggml.ggml_graph_n_nodes(gf)} nodes, {ggml.ggml_graph_n_leafs(gf)} leaves; "
              f"CPU variant {ggml.ggml_cpu_variant().decode()}")

        ok = True
        out = ggml.tensor_to_numpy(probs)  # a view: refreshed by every compute
        for n_threads in (1, 2):
            out[...] = np.nan  # so a node that silently did nothing cannot pass
            status = ggml.ggml_graph_compute_with_ctx(ctx, gf, n_threads)
            if status != ggml.GGML_STATUS_SUCCESS:
                print(f"compute with {n_threads} thread(s) failed: status {status}", file=sys.stderr)
                return 1
            got = out.copy()
            err = float(np.max(np.abs(got - expected)))
            same = np.allclose(got, expected, rtol=1e-5, atol=1e-6)
            ok = ok and same
            print(f"\nsoftmax(W x + b) with {n_threads} thread(s), shape {got.shape}:")
            print(np.array2string(got, precision=5, suppress_small=True))
            print(f"max |ggml - numpy| = {err:.2e}  ->  {'OK' if same else 'MISMATCH'}")
        print("\nresult equals NumPy" if ok else "\nresult DIFFERS from NumPy")
        return 0 if ok else 1
    finally:
        ggml.ggml_free(ctx)


if __name__ == "__main__":
    sys.exit(main())
