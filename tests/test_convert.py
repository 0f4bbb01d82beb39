"""HF -> GGUF converter (llama_py/convert.py) checked against Hugging Face `transformers` itself.

Small random LlamaForCausalLM checkpoints (GQA 4/2 heads, 2 layers, d 64) are built with tokenizers
trained here on tests/data/alice-chapter1.txt: a SentencePiece BPE with byte fallback
(tokenizer.model, wrapped as LlamaTokenizer) and byte-level BPEs from `tokenizers` with the
gpt-2, llama-bpe and smollm pre-tokenizers (wrapped as PreTrainedTokenizerFast). Each is saved
with save_pretrained, converted, and then, for the same prompts:
  - our tokens (llama_tokenize) equal the Hugging Face tokenizer's (and sentencepiece's for SPM);
  - our logits equal LlamaForCausalLM's: F32 within 1e-3 relative (measured ~1e-6); F16, BF16
    and Q8_0 within the tolerances in LOGIT_TOL, measured against the F32 checkpoint and also,
    tighter, against transformers run on the very weights the GGUF holds (dequantized with the
    `gguf` package, the RoPE permutation undone).
The GGUF files are read back with the `gguf` PyPI package (an independent reader) for keys,
tensor names, types and bytes (Q8_0 against gguf.quants' reference quantizer).

torch and transformers are test-only dependencies (requirements-test.txt); without them the
module is skipped, saying so.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (test-only dependency, see requirements-test.txt)")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (test-only dependency, see requirements-test.txt)")
gguf = pytest.importorskip("gguf")
spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

from llama_py import convert as C  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_util import Ctx, Model  # noqa: E402

import llama_py.llama_cpp as L  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "alice-chapter1.txt"

N_EMBD, N_HEAD, N_HEAD_KV, N_LAYER, N_FF = 64, 4, 2, 2, 128

# Logit differences, over every position of every prompt: "max" is max |ours - ref| / max |ref|,
# "rms" is RMS(ours - ref) / RMS(ref). "vs_f32": ref is transformers on the F32 checkpoint (what
# a user sees); "vs_same": ref is transformers on the weights the GGUF holds, with each Linear's
# input rounded as the engine rounds it for that weight type (F16/BF16 rows, Q8_0 blocks), so only
# the engine's own arithmetic (and an occasional rounding-boundary flip) remains. Bounds are
# ~2-3x the largest value measured over the five variants (see the report of issue #11).
LOGIT_TOL = {
    "f32": {"vs_f32": (1e-4, 1e-4), "vs_same": (1e-4, 1e-4)},
    "f16": {"vs_f32": (1e-2, 4e-3), "vs_same": (3e-3, 1.5e-3)},
    "bf16": {"vs_f32": (6e-2, 3e-2), "vs_same": (1.5e-2, 6e-3)},
    "q8_0": {"vs_f32": (2e-1, 1e-1), "vs_same": (6e-2, 1.5e-2)},
}

PROMPTS = [
    "Alice was beginning to get very tired of sitting by her sister on the bank",
    "So she was considering in her own mind (as well as she could, for the hot day made her feel very sleepy)",
    "Zażółć gęślą jaźń — 日本語のテキスト 😀 and 12345 or 3.14159",
    "tabs\tand\nnewlines\n\n  and  double  spaces, 'quotes' and I'll we've",
    "x",
]
# Leading whitespace: transformers 5's LlamaTokenizer (Metaspace, prepend_scheme "first") does not
# add sentencepiece's dummy prefix before a leading space; GGUF "llama" vocabularies follow
# sentencepiece, so these are compared with sentencepiece only for SPM.
LEADING_SPACE_PROMPTS = [" leading space", "   three spaces then text"]

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = LLAMA3_RE.replace(r"\p{N}{1,3}", r"\p{N}")
SPM_TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"


# ---------------------------------------------------------------------------------------------
# checkpoint builders

def _corpus_lines() -> List[str]:
    return [ln for ln in CORPUS.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _train_spm(out_dir: Path) -> Path:
    prefix = out_dir / "sp"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_corpus_lines()), model_prefix=str(prefix), vocab_size=400, model_type="bpe",
        byte_fallback=True, character_coverage=1.0, normalization_rule_name="identity",
        remove_extra_whitespaces=False, split_digits=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        add_dummy_prefix=True, allow_whitespace_only_pieces=True, minloglevel=2, num_threads=1)
    return prefix.with_suffix(".model")


def _train_bpe(pre: str):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    tk = Tokenizer(models.BPE(ignore_merges=(pre == "llama-bpe")))
    if pre == "gpt-2":
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    elif pre == "smollm":
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                    pre_tokenizers.ByteLevel(add_prefix_space=False)])
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    elif pre == "llama-bpe":
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    elif pre == "qwen2":
        tk.normalizer = tokenizers.normalizers.NFC()
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_RE), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    else:
        raise ValueError(pre)
    tk.decoder = decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=480, special_tokens=specials, show_progress=False,
                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(_corpus_lines(), trainer)
    if pre == "llama-bpe":
        bos = specials[0]
        tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                          special_tokens=[(bos, tk.token_to_id(bos))])
    return tk, specials


def _random_model(n_vocab: int, tied: bool, seed: int, rope: dict = None, dtype=None):
    kw = dict(vocab_size=n_vocab, hidden_size=N_EMBD, intermediate_size=N_FF, num_hidden_layers=N_LAYER,
              num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, max_position_embeddings=512,
              tie_word_embeddings=tied, rms_norm_eps=1e-5)
    if rope:
        kw["rope_parameters"] = dict(rope_theta=10000.0, **rope)
    cfg = transformers.LlamaConfig(**kw)
    torch.manual_seed(seed)
    m = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)    # non-trivial norm weights, so a mix-up of norms shows
            else:
                p.normal_(0.0, 1.0 / np.sqrt(p.shape[-1]))
    if dtype is not None:
        m = m.to(dtype)
    return m


class Checkpoint:
    """A saved HF directory plus the objects that made it (the references)."""

    def __init__(self, path: Path, model, hf_tok, kind: str, sp=None):
        self.path, self.model, self.hf_tok, self.kind, self.sp = path, model, hf_tok, kind, sp
        self.gguf: Dict[str, Path] = {}

    def converted(self, outtype: str) -> Path:
        if outtype not in self.gguf:
            out = self.path / f"model-{outtype}.gguf"
            C.convert(self.path, out, outtype, progress=None)
            self.gguf[outtype] = out
        return self.gguf[outtype]


def _spm_checkpoint(root: Path, sp_model: Path, name: str, tied: bool, seed: int, rope: dict = None,
                    dtype=None) -> Checkpoint:
    d = root / name
    d.mkdir()
    shutil.copy(sp_model, d / "tokenizer.model")
    tok = transformers.LlamaTokenizer.from_pretrained(str(d), add_bos_token=True)
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>"]})
    tok.chat_template = SPM_TEMPLATE
    tok.save_pretrained(str(d))
    model = _random_model(len(tok), tied, seed, rope, dtype)
    model.save_pretrained(str(d))
    hf = transformers.AutoTokenizer.from_pretrained(str(d))
    return Checkpoint(d, model, hf, "spm", spm.SentencePieceProcessor(model_file=str(sp_model)))


def _bpe_checkpoint(root: Path, name: str, pre: str, tied: bool, seed: int, pad_vocab_to: int = 0) -> Checkpoint:
    d = root / name
    d.mkdir()
    tk, specials = _train_bpe(pre)
    kw = dict(tokenizer_object=tk, eos_token=specials[-1] if pre == "llama-bpe" else specials[0])
    if pre == "llama-bpe":
        kw["bos_token"] = specials[0]
    else:
        kw["bos_token"] = specials[0]
    tok = transformers.PreTrainedTokenizerFast(**kw)
    tok.save_pretrained(str(d))
    n_vocab = max(len(tok), pad_vocab_to)
    model = _random_model(n_vocab, tied, seed)
    model.save_pretrained(str(d))
    hf = transformers.AutoTokenizer.from_pretrained(str(d))
    return Checkpoint(d, model, hf, pre)


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, lib_path) -> Dict[str, Checkpoint]:
    root = tmp_path_factory.mktemp("hf")
    sp_model = _train_spm(root)
    out = {
        "spm": _spm_checkpoint(root, sp_model, "spm", tied=False, seed=1),
        "spm-tied": _spm_checkpoint(root, sp_model, "spm-tied", tied=True, seed=2),
        "gpt-2": _bpe_checkpoint(root, "gpt-2", "gpt-2", tied=False, seed=3, pad_vocab_to=512),
        "llama-bpe": _bpe_checkpoint(root, "llama-bpe", "llama-bpe", tied=True, seed=4),
        "smollm": _bpe_checkpoint(root, "smollm", "smollm", tied=True, seed=5),
        "qwen2": _bpe_checkpoint(root, "qwen2", "qwen2", tied=False, seed=6),
    }
    return out


# ---------------------------------------------------------------------------------------------
# our side

def our_tokens(model: Model, text: str, parse_special: bool = True) -> List[int]:
    data = text.encode("utf-8")
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(model.vocab, data, len(data), buf, len(buf), True, parse_special)
    assert n >= 0, n
    return list(buf[:n])


def our_logits(path: Path, token_lists: List[List[int]]) -> List[np.ndarray]:
    """Logits of every position; F32 KV cache so that only the weights' type differs."""
    out = []
    with Model(path) as m, Ctx(m, n_ctx=512, n_batch=512, n_ubatch=512, type_k=0, type_v=0) as c:
        for toks in token_lists:
            L.llama_memory_clear(c.mem, True)
            assert c.decode_seq(toks) == 0
            out.append(c.all_logits(len(toks)))
    return out


def hf_logits(model, token_lists: List[List[int]]) -> List[np.ndarray]:
    with torch.no_grad():
        return [model(torch.tensor([t])).logits[0].double().numpy() for t in token_lists]


def rel_err(ours: List[np.ndarray], ref: List[np.ndarray]) -> float:
    """max |ours - ref| / max |ref|, over all positions of all prompts."""
    return max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(ours, ref))


def rms_err(ours: List[np.ndarray], ref: List[np.ndarray]) -> float:
    """RMS of (ours - ref) / RMS of ref, over all positions of all prompts."""
    d = np.concatenate([(a - b).ravel() for a, b in zip(ours, ref)])
    r = np.concatenate([b.ravel() for b in ref])
    return float(np.sqrt(np.mean(d * d) / np.mean(r * r)))


def model_from_gguf(ck: Checkpoint, path: Path):
    """transformers' model with the weights the GGUF holds (dequantized, RoPE permutation undone)."""
    import copy
    m = copy.deepcopy(ck.model).float()
    r = gguf.GGUFReader(str(path))
    sd = m.state_dict()
    names = {v: k for k, v in C._LAYER_MAP.items()}
    with torch.no_grad():
        for t in r.tensors:
            w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            w = w.reshape([int(x) for x in reversed(t.shape)])
            if t.name == "token_embd.weight":
                keys = ["model.embed_tokens.weight"]
            elif t.name == "output.weight":
                keys = ["lm_head.weight"]
            elif t.name == "output_norm.weight":
                keys = ["model.norm.weight"]
            else:
                _, il, rest = t.name.split(".", 2)
                keys = [f"model.layers.{il}.{names[rest]}"]
            if t.name.endswith("attn_q.weight") or t.name.endswith("attn_k.weight"):
                heads = N_HEAD if "attn_q" in t.name else N_HEAD_KV
                inv = np.argsort(C.qk_row_permutation(w.shape[0], heads))
                w = w[inv]
            for k in keys:
                sd[k].copy_(torch.from_numpy(np.ascontiguousarray(w)).reshape(sd[k].shape))
    return m


@functools.lru_cache(maxsize=None)
def _float_weights_round_activations() -> bool:
    """Whether this machine's kernels round activations to F16 / BF16 for such weights: the
    per-row dot products do (portable, NEON); the float tiles of AVX2 and up keep them F32
    (ggml/src/ggml-cpu/ops-matmul-float.c)."""
    info = L.llama_print_system_info().decode()
    variant = info.split("variant = ", 1)[1].split()[0] if "variant = " in info else "portable"
    return variant not in ("avx2", "avxvnni", "avx512")


def _round_activations(x, outtype: str):
    """x as the engine feeds it to a matrix product with outtype weights: F16 / BF16 rows rounded
    to that type where the kernels do so, Q8_0 rows quantized in blocks of 32 (scale amax/127
    stored as f16)."""
    if outtype in ("f16", "bf16") and not _float_weights_round_activations():
        return x
    if outtype == "f16":
        return x.half().float()
    if outtype == "bf16":
        return x.bfloat16().float()
    if outtype == "q8_0":
        b = x.reshape(*x.shape[:-1], -1, 32)
        d = b.abs().amax(-1, keepdim=True) / 127.0
        q = torch.where(d > 0, torch.round(b / torch.where(d > 0, d, torch.ones_like(d))), torch.zeros_like(b))
        return (q * d.half().float()).reshape(x.shape)
    return x


def emulate_engine_rounding(model, outtype: str):
    """Rounds the input of every Linear as the engine does for outtype weights."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.register_forward_pre_hook(lambda _m, args: (_round_activations(args[0], outtype),))
    return model


def hf_ids(ck: Checkpoint, text: str) -> List[int]:
    return list(ck.hf_tok(text)["input_ids"])


# ---------------------------------------------------------------------------------------------
# tests

VARIANTS = ["spm", "spm-tied", "gpt-2", "llama-bpe", "smollm", "qwen2"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_tokens_equal_hf(ckpts, variant):
    ck = ckpts[variant]
    prompts = list(PROMPTS)
    if ck.kind != "spm":
        specials = [t for t in ck.hf_tok.all_special_tokens]
        prompts += [f"{specials[0]}Hello {specials[-1]} there", f"{specials[-1]}\n\n{specials[0]} 123"]
    with Model(ck.converted("f32")) as m:
        for p in prompts:
            assert our_tokens(m, p) == hf_ids(ck, p), (variant, p)
        if ck.kind == "spm":
            for p in PROMPTS + LEADING_SPACE_PROMPTS:
                assert our_tokens(m, p, parse_special=False) == [1] + ck.sp.encode(p), (variant, p)
            # The added special token converted as a control token: matched whole, with the text
            # around it tokenized as its own sentencepiece piece (llama.cpp's convention; transformers
            # 5 drops the dummy prefix after a special token, so it is not the reference here).
            user = ck.hf_tok.convert_tokens_to_ids("<|user|>")
            assert our_tokens(m, "<|user|>") == [1, user] == hf_ids(ck, "<|user|>")
            assert our_tokens(m, "a<|user|>b c") == [1] + ck.sp.encode("a") + [user] + ck.sp.encode("b c")
            assert our_tokens(m, "a<|user|>b", parse_special=False) == [1] + ck.sp.encode("a<|user|>b")
        else:
            for p in LEADING_SPACE_PROMPTS:
                assert our_tokens(m, p) == hf_ids(ck, p), (variant, p)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("outtype", ["f32", "f16", "bf16", "q8_0"])
def test_logits_equal_hf(ckpts, variant, outtype, record_property):
    ck = ckpts[variant]
    toks = [hf_ids(ck, p) for p in PROMPTS]
    path = ck.converted(outtype)
    ours = our_logits(path, toks)
    ref = hf_logits(ck.model, toks)
    same = ref if outtype == "f32" else hf_logits(emulate_engine_rounding(model_from_gguf(ck, path), outtype), toks)
    got = {"vs_f32": (rel_err(ours, ref), rms_err(ours, ref)), "vs_same": (rel_err(ours, same), rms_err(ours, same))}
    for k, (mx, rms) in got.items():
        record_property(f"{k}_max", mx)
        record_property(f"{k}_rms", rms)
    print(f"\n{variant:>10} {outtype:>5}: vs f32 checkpoint max {got['vs_f32'][0]:.2e} rms {got['vs_f32'][1]:.2e}; "
          f"vs same weights max {got['vs_same'][0]:.2e} rms {got['vs_same'][1]:.2e}", end="")
    for k, (mx, rms) in got.items():
        tmax, trms = LOGIT_TOL[outtype][k]
        if k == "vs_same" and outtype in ("f16", "bf16") and not _float_weights_round_activations():
            tmax, trms = LOGIT_TOL["f32"][k]  # F32 activations on the very weights: as exact as F32
        assert mx < tmax and rms < trms, (variant, outtype, k, mx, rms)


def test_tensor_bytes(ckpts):
    """Every tensor's bytes against the checkpoint, converted independently with NumPy and the
    `gguf` package's quantizers; Q/K rows permuted per head (K with the KV head count)."""
    ck = ckpts["spm"]
    sd = {k: v.detach().float().numpy() for k, v in ck.model.state_dict().items()}

    def expected_f32(name: str) -> np.ndarray:
        if name == "token_embd.weight":
            return sd["model.embed_tokens.weight"]
        if name == "output.weight":
            return sd["lm_head.weight"]
        if name == "output_norm.weight":
            return sd["model.norm.weight"]
        _, il, rest = name.split(".", 2)
        w = sd[f"model.layers.{il}.{ {v: k for k, v in C._LAYER_MAP.items()}[rest] }"]
        if rest in ("attn_q.weight", "attn_k.weight"):
            hd = N_EMBD // N_HEAD
            heads = w.shape[0] // hd
            # HF keeps the two rotary halves of a head apart; GGUF interleaves them as pairs
            w = w.reshape(heads, 2, hd // 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)
        return w

    for outtype, qtype in [("f32", gguf.GGMLQuantizationType.F32), ("f16", gguf.GGMLQuantizationType.F16),
                           ("bf16", gguf.GGMLQuantizationType.BF16), ("q8_0", gguf.GGMLQuantizationType.Q8_0)]:
        r = gguf.GGUFReader(str(ck.converted(outtype)))
        names = [t.name for t in r.tensors]
        assert len(names) == 3 + 9 * N_LAYER and len(set(names)) == len(names)
        for t in r.tensors:
            want = expected_f32(t.name)
            assert tuple(int(x) for x in reversed(t.shape)) == want.shape, t.name
            if want.ndim == 1:
                assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
                assert np.array_equal(np.asarray(t.data), want), t.name
                continue
            assert t.tensor_type == qtype, (outtype, t.name)
            if qtype == gguf.GGMLQuantizationType.F32:
                ref = want.astype(np.float32).tobytes()
            elif qtype == gguf.GGMLQuantizationType.F16:
                ref = want.astype(np.float16).tobytes()
            else:
                ref = gguf.quants.quantize(want.astype(np.float32), qtype).tobytes()
            assert np.asarray(t.data).tobytes() == ref, (outtype, t.name)


def test_metadata(ckpts):
    """Keys and tensor set, read back with the `gguf` package."""
    def fields(path):
        r = gguf.GGUFReader(str(path))
        return {k: f.contents() for k, f in r.fields.items()}, {t.name for t in r.tensors}

    ck = ckpts["spm"]
    kv, names = fields(ck.converted("f16"))
    cfg = ck.model.config
    assert kv["general.architecture"] == "llama"
    assert kv["general.file_type"] == 1
    assert kv["llama.block_count"] == N_LAYER
    assert kv["llama.embedding_length"] == N_EMBD
    assert kv["llama.feed_forward_length"] == N_FF
    assert kv["llama.attention.head_count"] == N_HEAD
    assert kv["llama.attention.head_count_kv"] == N_HEAD_KV
    assert kv["llama.rope.dimension_count"] == N_EMBD // N_HEAD
    assert kv["llama.context_length"] == cfg.max_position_embeddings
    assert kv["llama.vocab_size"] == cfg.vocab_size == len(ck.hf_tok)
    assert kv["llama.rope.freq_base"] == pytest.approx(10000.0)
    assert kv["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(1e-5)
    assert "llama.rope.scaling.type" not in kv
    # SentencePiece pieces, scores and types as sentencepiece has them, then the added token
    sp = ck.sp
    n = sp.get_piece_size()
    assert kv["tokenizer.ggml.model"] == "llama"
    assert kv["tokenizer.ggml.tokens"][:n] == [sp.id_to_piece(i) for i in range(n)]
    assert np.allclose(kv["tokenizer.ggml.scores"][:n], [sp.get_score(i) for i in range(n)])
    types = kv["tokenizer.ggml.token_type"]
    for i in range(n):
        want = 2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1
        assert types[i] == want, (i, sp.id_to_piece(i))
    assert kv["tokenizer.ggml.tokens"][n:] == ["<|user|>"] and types[n:] == [3]
    assert (kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"],
            kv["tokenizer.ggml.unknown_token_id"]) == (1, 2, 0)
    assert kv["tokenizer.ggml.add_bos_token"] is True and kv["tokenizer.ggml.add_eos_token"] is False
    assert kv["tokenizer.ggml.add_space_prefix"] is True
    assert kv["tokenizer.chat_template"] == SPM_TEMPLATE
    assert "output.weight" in names

    kv, names = fields(ckpts["spm-tied"].converted("q8_0"))
    assert kv["general.file_type"] == 7 and "output.weight" not in names and "token_embd.weight" in names

    kv, names = fields(ckpts["gpt-2"].converted("bf16"))
    tok = ckpts["gpt-2"].hf_tok
    assert kv["general.file_type"] == 32
    assert kv["tokenizer.ggml.model"] == "gpt2" and kv["tokenizer.ggml.pre"] == "gpt-2"
    assert len(kv["tokenizer.ggml.tokens"]) == kv["llama.vocab_size"] == 512 > len(tok)
    assert kv["tokenizer.ggml.tokens"][len(tok):] == [f"[PAD{i}]" for i in range(len(tok), 512)]
    assert set(kv["tokenizer.ggml.token_type"][len(tok):]) == {5}
    js = json.loads((ckpts["gpt-2"].path / "tokenizer.json").read_text())
    assert kv["tokenizer.ggml.merges"] == [" ".join(m) if isinstance(m, list) else m for m in js["model"]["merges"]]
    assert "tokenizer.ggml.scores" not in kv
    for t in js["added_tokens"]:
        assert kv["tokenizer.ggml.tokens"][t["id"]] == t["content"] and kv["tokenizer.ggml.token_type"][t["id"]] == 3
    assert kv["tokenizer.ggml.bos_token_id"] == tok.bos_token_id
    assert kv["tokenizer.ggml.eos_token_id"] == tok.eos_token_id
    assert kv["tokenizer.ggml.pre"] == "gpt-2"
    assert fields(ckpts["llama-bpe"].converted("f32"))[0]["tokenizer.ggml.pre"] == "llama-bpe"
    assert fields(ckpts["smollm"].converted("f32"))[0]["tokenizer.ggml.pre"] == "smollm"
    assert fields(ckpts["qwen2"].converted("f32"))[0]["tokenizer.ggml.pre"] == "qwen2"


def _pre(*steps, normalizer=None):
    return {"normalizer": normalizer, "pre_tokenizer": steps[0] if len(steps) == 1 else
            {"type": "Sequence", "pretokenizers": list(steps)}}


def _bl(use_regex=True, add_prefix_space=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": use_regex}


def _split(rx):
    return {"type": "Split", "pattern": {"Regex": rx}, "behavior": "Isolated", "invert": False}


def test_detect_pre_tokenizer():
    """The pre-tokenizer configurations that published tokenizer.json files carry, both spellings
    of the Llama-3 / Qwen2 case-insensitive contractions, and refusals."""
    llama3_cased = LLAMA3_RE.replace("(?i:'s|'t|'re|'ve|'m|'ll|'d)",
                                     "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])")
    digits = {"type": "Digits", "individual_digits": True}
    assert C.detect_bpe_pre(_pre(_bl())) == "gpt-2"
    assert C.detect_bpe_pre(_pre(_split(LLAMA3_RE), _bl(False))) == "llama-bpe"
    assert C.detect_bpe_pre(_pre(_split(llama3_cased), _bl(False))) == "llama-bpe"
    assert C.detect_bpe_pre(_pre(_split(QWEN2_RE), _bl(False), normalizer={"type": "NFC"})) == "qwen2"
    assert C.detect_bpe_pre(_pre(digits, _bl())) == "smollm"
    for bad in [_pre(_bl(add_prefix_space=True)), _pre(_split(LLAMA3_RE + "x"), _bl(False)),
                _pre({"type": "Metaspace", "replacement": "\u2581"}), _pre(_split(LLAMA3_RE), _bl(True)),
                _pre({"type": "Digits", "individual_digits": False}, _bl()), {"pre_tokenizer": None}]:
        with pytest.raises(C.ConvertError, match="unknown pre-tokenizer"):
            C.detect_bpe_pre(bad)
    with pytest.raises(C.ConvertError, match="normalizer"):
        C.detect_bpe_pre(_pre(_bl(), normalizer={"type": "Lowercase"}))


def test_chat_template_and_specials_through_the_library(ckpts):
    with Model(ckpts["spm"].converted("f16")) as m:
        assert L.llama_model_chat_template(m.ptr, None) == SPM_TEMPLATE.encode()
        assert L.llama_vocab_bos(m.vocab) == 1 and L.llama_vocab_eos(m.vocab) == 2
        assert L.llama_vocab_get_add_bos(m.vocab)
    ck = ckpts["llama-bpe"]
    with Model(ck.converted("f16")) as m:
        assert L.llama_vocab_bos(m.vocab) == ck.hf_tok.bos_token_id
        assert L.llama_vocab_get_add_bos(m.vocab)         # from the TemplateProcessing post-processor
        assert L.llama_vocab_is_eog(m.vocab, ck.hf_tok.eos_token_id)
    with Model(ckpts["gpt-2"].converted("f16")) as m:
        assert not L.llama_vocab_get_add_bos(m.vocab)


# ---- checkpoints in other shapes ----

def _rope_checkpoint(root: Path, sp_model: Path, name: str, rope: dict) -> Checkpoint:
    return _spm_checkpoint(root, sp_model, name, tied=False, seed=7, rope=rope)


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory) -> Path:
    return _train_spm(tmp_path_factory.mktemp("sp"))


@pytest.mark.parametrize("rope", [
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 64},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128},
], ids=lambda r: r["rope_type"])
def test_rope_scaling(tmp_path, sp_model, lib_path, rope):
    ck = _rope_checkpoint(tmp_path, sp_model, "rope", rope)
    out = ck.converted("f32")
    kv = {k: f.contents() for k, f in gguf.GGUFReader(str(out)).fields.items()}
    if rope["rope_type"] == "llama3":
        assert "llama.rope.scaling.type" not in kv
        names = [t.name for t in gguf.GGUFReader(str(out)).tensors]
        assert "rope_freqs.weight" in names
    else:
        assert kv["llama.rope.scaling.type"] == rope["rope_type"]
        assert kv["llama.rope.scaling.factor"] == pytest.approx(rope["factor"])
    # long enough prompts that positions pass the original context
    long = " ".join(PROMPTS[:3]) * 2
    toks = [hf_ids(ck, p) for p in PROMPTS[:2] + [long]]
    assert len(toks[-1]) > 160
    err = rel_err(our_logits(out, toks), hf_logits(ck.model, toks))
    # the scaling matters at these positions: transformers without it is far off
    cfg = transformers.LlamaConfig(**{**ck.model.config.to_dict(), "rope_parameters": {"rope_type": "default",
                                                                                       "rope_theta": 10000.0}})
    plain = transformers.LlamaForCausalLM(cfg).eval()
    plain.load_state_dict(ck.model.state_dict())
    off = rel_err(hf_logits(plain, toks), hf_logits(ck.model, toks))
    print(f"\nrope {rope['rope_type']}: f32 max rel {err:.2e} (unscaled transformers: {off:.2e})", end="")
    assert err < 1e-4, err
    assert off > 1e-2, off


def test_sharded_bf16_checkpoint(tmp_path, sp_model, lib_path):
    """A BF16 checkpoint in several shards (model.safetensors.index.json): BF16 out keeps the
    checkpoint's bits, F32 out widens them exactly, and the logits equal transformers' on them."""
    d = tmp_path / "sharded"
    d.mkdir()
    shutil.copy(sp_model, d / "tokenizer.model")
    tok = transformers.LlamaTokenizer.from_pretrained(str(d), add_bos_token=True)
    tok.save_pretrained(str(d))
    model = _random_model(len(tok), tied=False, seed=11, dtype=torch.bfloat16)
    model.save_pretrained(str(d), max_shard_size="40KB")
    shards = sorted(p.name for p in d.glob("*.safetensors"))
    assert (d / "model.safetensors.index.json").exists() and len(shards) > 2, shards
    # the reference: transformers loading this directory in float32 (a model cast with .to()
    # would carry a bf16-rounded rotary inv_freq buffer)
    ref_model = transformers.LlamaForCausalLM.from_pretrained(str(d), dtype=torch.float32).eval()
    ck = Checkpoint(d, ref_model, transformers.AutoTokenizer.from_pretrained(str(d)), "spm")

    sd = {k: v.detach().to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
          for k, v in model.state_dict().items()}
    r = gguf.GGUFReader(str(ck.converted("bf16")))
    for t in r.tensors:
        if t.name in ("blk.1.attn_k.weight", "blk.0.ffn_down.weight", "token_embd.weight"):
            src = {"blk.1.attn_k.weight": "model.layers.1.self_attn.k_proj.weight",
                   "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight",
                   "token_embd.weight": "model.embed_tokens.weight"}[t.name]
            w = sd[src]
            if "attn_k" in t.name:
                w = w[C.qk_row_permutation(w.shape[0], N_HEAD_KV)]
            assert np.asarray(t.data).tobytes() == w.tobytes(), t.name
    toks = [hf_ids(ck, p) for p in PROMPTS]
    ref = hf_logits(ck.model, toks)
    err = rel_err(our_logits(ck.converted("f32"), toks), ref)
    assert err < 1e-4, err


def test_cli_progress_and_errors(tmp_path, ckpts):
    env = dict(os.environ)
    out = tmp_path / "cli.gguf"
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "convert_hf_to_gguf.py"), str(ckpts["smollm"].path),
                        "--outfile", str(out), "--outtype", "q8_0"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("[")]
    assert len(lines) == 2 + 9 * N_LAYER and "token_embd.weight" in lines[0] and "q8_0" in lines[0]
    assert "wrote" in p.stderr and out.exists()
    assert out.read_bytes() == ckpts["smollm"].converted("q8_0").read_bytes()

    # errors are one clear line and exit status 1, and leave no partial file
    bad = tmp_path / "bad"
    shutil.copytree(ckpts["gpt-2"].path, bad, ignore=shutil.ignore_patterns("*.gguf"))
    js = json.loads((bad / "tokenizer.json").read_text())
    js["pre_tokenizer"] = {"type": "Whitespace"}
    (bad / "tokenizer.json").write_text(json.dumps(js))
    assert C.main([str(bad), "--outfile", str(tmp_path / "x.gguf")]) == 1
    with pytest.raises(C.ConvertError, match="unknown pre-tokenizer .*Whitespace.*supported: gpt-2, llama-bpe"):
        C.convert(bad, tmp_path / "x.gguf", "f16", progress=None)
    assert not list(tmp_path.glob("x.gguf*"))

    bad2 = tmp_path / "bad2"
    shutil.copytree(ckpts["spm"].path, bad2, ignore=shutil.ignore_patterns("*.gguf"))
    cfg = json.loads((bad2 / "config.json").read_text())
    cfg["num_hidden_layers"] = 3
    (bad2 / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(C.ConvertError, match="no tensor 'model.layers.2"):
        C.convert(bad2, tmp_path / "y.gguf", "f16", progress=None)
    cfg["num_hidden_layers"] = 1
    (bad2 / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(C.ConvertError, match="not used by the llama architecture: model.layers.1"):
        C.convert(bad2, tmp_path / "y.gguf", "f16", progress=None)
    cfg["num_hidden_layers"] = N_LAYER
    cfg["vocab_size"] = 10
    (bad2 / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(C.ConvertError, match="tokenizer has 401 tokens but the model's embedding has 10"):
        C.convert(bad2, tmp_path / "y.gguf", "f16", progress=None)
    with pytest.raises(C.ConvertError, match="outtype"):
        C.convert(ckpts["spm"].path, tmp_path / "y.gguf", "q4_0", progress=None)
    cfg["vocab_size"] = json.loads((ckpts["spm"].path / "config.json").read_text())["vocab_size"]
    cfg["attention_bias"] = True
    (bad2 / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(C.ConvertError, match="attention_bias"):
        C.convert(bad2, tmp_path / "y.gguf", "f16", progress=None)
    cfg["attention_bias"] = False
    (bad2 / "config.json").write_text(json.dumps(cfg))
    # a SentencePiece-style (byte-fallback) tokenizer.json without its tokenizer.model
    (bad2 / "tokenizer.model").unlink()
    with pytest.raises(C.ConvertError, match="needs its tokenizer.model"):
        C.convert(bad2, tmp_path / "y.gguf", "f16", progress=None)
    # a truncated shard
    data = (bad2 / "model.safetensors").read_bytes()
    (bad2 / "model.safetensors").write_bytes(data[:len(data) // 2])
    with pytest.raises(C.ConvertError, match="data offsets"):
        C.Checkpoint(bad2)


def test_safetensors_reader_against_safetensors(tmp_path):
    """Our header parser and views against the `safetensors` package's own writer."""
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(0)
    tensors = {"a": rng.standard_normal((3, 5)).astype(np.float32), "b": rng.standard_normal(7).astype(np.float16),
               "c": np.arange(12, dtype=np.int64).reshape(2, 3, 2), "empty": np.zeros((0, 4), np.float32)}
    path = tmp_path / "t.safetensors"
    st.save_file(tensors, str(path), metadata={"format": "np"})
    f = C.SafetensorsFile(path)
    try:
        assert f.metadata == {"format": "np"}
        for k, v in tensors.items():
            got = f.array(k)
            assert got.shape == v.shape and got.dtype == v.dtype and np.array_equal(got, v), k
    finally:
        f.close()


@pytest.mark.parametrize("variant", ["spm", "llama-bpe"])
def test_llama_cpp_converter_file_matches_hf(ckpts, variant, tmp_path):
    """The `llama` architecture from a file written by llama.cpp's convert_hf_to_gguf.py (0.3.36)."""
    from upstream_convert import convert_with_llama_cpp
    ck = ckpts[variant]
    path = convert_with_llama_cpp(ck.path, tmp_path / "upstream.gguf", "f32",
                                  pre=None if ck.kind == "spm" else variant)
    toks = [hf_ids(ck, p) for p in PROMPTS]
    with Model(path) as m:
        for p in PROMPTS:
            assert our_tokens(m, p) == hf_ids(ck, p), p
    err = rel_err(our_logits(path, toks), hf_logits(ck.model, toks))
    assert err < 1e-3, err


def test_unigram_sentencepiece_converts_to_t5_vocab(tmp_path, lib_path):
    """A unigram tokenizer.model (nmt_nfkc normalizer, extra whitespace removed) converts to a
    "t5" vocabulary with its precompiled charsmap, tokenized as sentencepiece encodes."""
    prefix = tmp_path / "uni"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_corpus_lines()), model_prefix=str(prefix), vocab_size=400, model_type="unigram",
        character_coverage=1.0, normalization_rule_name="nmt_nfkc", remove_extra_whitespaces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, add_dummy_prefix=True, minloglevel=2, num_threads=1)
    sp_model = prefix.with_suffix(".model")
    ck = _spm_checkpoint(tmp_path, sp_model, "uni", tied=False, seed=9)
    out = tmp_path / "uni.gguf"
    C.convert(ck.path, out, "f32", progress=None)
    kv = {k: f.contents() for k, f in gguf.GGUFReader(str(out)).fields.items()}
    assert kv["tokenizer.ggml.model"] == "t5"
    assert len(kv["tokenizer.ggml.precompiled_charsmap"]) > 1000
    with Model(out) as m:
        for p in PROMPTS + LEADING_SPACE_PROMPTS + ["ｆｕｌｌ　ｗｉｄｔｈ ①", "  many   spaces  ", "e\u0301"]:
            assert our_tokens(m, p, parse_special=False)[1:] == ck.sp.encode(p), p
