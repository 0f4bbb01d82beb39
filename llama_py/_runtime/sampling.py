"""Request sampling options -> a llama_sampler chain, the one `Llama` and the server both use.

The chain is the order llama.cpp's samplers form: grammar, logit bias, penalties (primed with
the last penalty_last_n tokens of the history, so the window sees the prompt but the grammar
does not), then one of: greedy (temperature 0), a plain draw from the distribution
(temperature < 0), mirostat 1 or 2 (after temperature), or top-k, typical, top-p, min-p,
temperature and a seeded draw.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence

from .. import llama_cpp as C

PENALTY_LAST_N = 64  # llama.cpp's default repeat_last_n (and Llama's last_n_tokens_size)


@dataclass
class SamplingParams:
    """Every sampling option of a request. temperature 0 is greedy, below 0 a plain draw;
    seed None: the caller's default seed; penalty_last_n -1: the whole context, 0: no window."""
    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    penalty_last_n: int = PENALTY_LAST_N
    mirostat_mode: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    seed: Optional[int] = None
    logit_bias: Optional[Dict[int, float]] = None
    grammar: Optional[Any] = None  # llama_py.grammar.LlamaGrammar
    ignore_eos: bool = False       # never sample an end-of-generation token (benchmarks)


def build_chain(vocab, n_vocab: int, sp: SamplingParams, history: Sequence[int] = (), n_ctx: int = 0,
                default_seed: int = C.LLAMA_DEFAULT_SEED,
                eog_tokens: Optional[Callable[[], Sequence[int]]] = None):
    """A new sampler chain for sp (free it with llama_sampler_free). ValueError on a bad grammar,
    a logit_bias token outside the vocabulary or an unknown mirostat mode."""
    if sp.mirostat_mode not in (0, 1, 2):
        raise ValueError(f"mirostat_mode must be 0, 1 or 2, got {sp.mirostat_mode}")
    chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
    try:
        if sp.grammar is not None:
            from ..grammar import sampler_from_grammar  # raises ValueError on a bad grammar
            C.llama_sampler_chain_add(chain, sampler_from_grammar(vocab, sp.grammar))
        bias = {int(k): float(v) for k, v in (sp.logit_bias or {}).items()}
        for tok in bias:
            if not 0 <= tok < n_vocab:
                raise ValueError(f"logit_bias: token {tok} is not in the vocabulary (0..{n_vocab - 1})")
        if sp.ignore_eos and eog_tokens is not None:
            bias.update({int(t): float("-inf") for t in eog_tokens()})
        if bias:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_logit_bias(n_vocab, None, bias))
        if (sp.repeat_penalty and sp.repeat_penalty != 1.0) or sp.frequency_penalty or sp.presence_penalty:
            last_n = n_ctx if sp.penalty_last_n < 0 else sp.penalty_last_n
            pen = C.llama_sampler_init_penalties(n_vocab, last_n, sp.repeat_penalty or 1.0,
                                                 sp.frequency_penalty, sp.presence_penalty)
            for t in list(history)[-last_n:] if last_n > 0 else []:
                C.llama_sampler_accept(pen, int(t))  # the window sees the prompt, the grammar must not
            C.llama_sampler_chain_add(chain, pen)
        seed = (default_seed if sp.seed is None else sp.seed) & 0xFFFFFFFF
        temp = sp.temperature
        if temp is None or temp == 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        elif temp < 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
        elif sp.mirostat_mode == 1:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temp))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_mirostat(n_vocab, seed, sp.mirostat_tau,
                                                                           sp.mirostat_eta, 100))
        elif sp.mirostat_mode == 2:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temp))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_mirostat_v2(seed, sp.mirostat_tau, sp.mirostat_eta))
        else:
            if sp.top_k and sp.top_k > 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(sp.top_k))
            if sp.typical_p is not None and sp.typical_p < 1.0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_typical(sp.typical_p, 1))
            if sp.top_p is not None and sp.top_p < 1.0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(sp.top_p, 1))
            if sp.min_p and sp.min_p > 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(sp.min_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temp))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
    except BaseException:
        C.llama_sampler_free(chain)
        raise
    return chain
