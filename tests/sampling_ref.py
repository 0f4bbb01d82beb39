"""NumPy reference implementations of the llama.h samplers, written from their documented
formulas (and from the conventions llama_py documents for degenerate input), independently of
the C code. Each takes and returns a `Cand`: parallel arrays of ids, logits and probabilities,
plus the `selected` index and the `sorted` flag.

Conventions shared with the library (src/sampling-impl.h):
  * a NaN logit ranks as -inf and never receives probability;
  * softmax: +inf logits share the mass equally; if every logit is -inf the distribution is
    uniform; otherwise exp(l - max) / sum;
  * ties rank the earlier position first (stable sorts);
  * random draws come from PCG32 (PCG-XSH-RR 64/32) seeded as pcg32_srandom(seed, 54);
    u = next32 / 2^32, and a draw picks the first index whose running sum of p exceeds u.
"""
from __future__ import annotations

import dataclasses
import math
from typing import List, Sequence

import numpy as np

M64 = (1 << 64) - 1
DEFAULT_SEED = 0xFFFFFFFF


# ---- PCG32 ----

class PCG32:
    """O'Neill's PCG-XSH-RR 64/32 with the reference seeding (initseq 54)."""

    def __init__(self, seed: int):
        self.state = 0
        self.inc = ((54 << 1) | 1) & M64
        self.next()
        self.state = (self.state + (seed & 0xFFFFFFFF)) & M64
        self.next()

    def next(self) -> int:
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) & M64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def uniform(self) -> float:
        return self.next() / 4294967296.0


# ---- candidates ----

@dataclasses.dataclass
class Cand:
    ids: np.ndarray      # int32
    logits: np.ndarray   # float32
    p: np.ndarray        # float64 (the reference computes in double)
    selected: int = -1
    sorted: bool = False

    @staticmethod
    def of(logits, ids=None) -> "Cand":
        logits = np.asarray(logits, dtype=np.float32).copy()
        n = logits.shape[0]
        ids = np.arange(n, dtype=np.int32) if ids is None else np.asarray(ids, dtype=np.int32).copy()
        return Cand(ids, logits, np.zeros(n, dtype=np.float64))

    def take(self, idx) -> "Cand":
        idx = np.asarray(idx, dtype=np.int64)
        return Cand(self.ids[idx].copy(), self.logits[idx].copy(), self.p[idx].copy(), -1, self.sorted)

    def copy(self) -> "Cand":
        return Cand(self.ids.copy(), self.logits.copy(), self.p.copy(), self.selected, self.sorted)

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])


def key(logits: np.ndarray) -> np.ndarray:
    """Ranking key: NaN -> -inf."""
    k = np.asarray(logits, dtype=np.float64)
    return np.where(np.isnan(k), -np.inf, k)


def desc_order(logits: np.ndarray) -> np.ndarray:
    """Positions by descending logit, ties by position (stable)."""
    return np.argsort(-key(logits), kind="stable")


def softmax(logits: np.ndarray) -> np.ndarray:
    k = key(logits)
    n = k.shape[0]
    if n == 0:
        return np.zeros(0)
    mx = k.max()
    if mx == np.inf:
        inf = k == np.inf
        return inf / inf.sum()
    if mx == -np.inf:
        return np.full(n, 1.0 / n)
    e = np.exp(k - mx)
    return e / e.sum()


def draw(p: np.ndarray, u: float) -> int:
    """First index whose running sum of p (over p > 0) exceeds u; else the last with p > 0."""
    cum = 0.0
    last = -1
    for i, pi in enumerate(p):
        if pi > 0:
            cum += pi
            last = i
            if u < cum:
                return i
    return last if last >= 0 else 0


def entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-(q * np.log(q)).sum())


# ---- stateless samplers ----

def greedy(c: Cand) -> Cand:
    c = c.copy()
    c.selected = int(np.argmax(key(c.logits))) if c.size else -1
    return c


def top_k(c: Cand, k: int) -> Cand:
    if k <= 0 or k >= c.size:
        return c.copy()
    out = c.take(desc_order(c.logits)[:k])
    out.sorted = True
    return out


def top_p_cut(probs_sorted: np.ndarray, p: float, min_keep: int) -> int:
    """Smallest m >= max(1, min_keep) with sum(probs_sorted[:m]) >= p; 0 if none."""
    cum = np.cumsum(probs_sorted)
    for i in range(len(cum)):
        if cum[i] >= p and i + 1 >= min_keep:
            return i + 1
    return 0


def top_p(c: Cand, p: float, min_keep: int) -> Cand:
    """Nucleus; also returns the cut for tolerance checks in `top_p_range`."""
    if c.size == 0 or not (p < 1.0):
        return c.copy()
    c = c.copy()
    c.p = softmax(c.logits)
    out = c.take(desc_order(c.logits))
    out.sorted = True
    m = top_p_cut(out.p, p, min_keep)
    return out.take(np.arange(m)) if m else out


def min_p(c: Cand, p: float, min_keep: int) -> Cand:
    if c.size == 0 or not (p > 0.0):
        return c.copy()
    k = key(c.logits)
    mx = np.float32(k.max())
    if mx == -np.inf:
        return c.copy()
    thr = np.float32(mx + np.float32(math.log(np.float32(p)))) if p > 0 else -np.inf
    keep = k >= thr
    want = max(1, min_keep)
    if keep.sum() >= want:
        return c.take(np.nonzero(keep)[0])
    return top_k(c, want) if want < c.size else c.copy()


def typical(c: Cand, p: float, min_keep: int) -> Cand:
    if c.size == 0 or not (p < 1.0):
        return c.copy()
    c = c.copy()
    c.p = softmax(c.logits)
    h = entropy(c.p)
    with np.errstate(divide="ignore"):
        score = np.where(c.p > 0, np.abs(-np.log(np.where(c.p > 0, c.p, 1.0)) - h), np.inf)
    order = np.argsort(score.astype(np.float32), kind="stable")
    out = c.take(order)
    m = top_p_cut(out.p, p, min_keep)
    out = out.take(np.arange(m)) if m else out
    out.sorted = False
    return out


def temp(c: Cand, t: float) -> Cand:
    c = c.copy()
    if math.isnan(t) or c.size == 0:
        return c
    if t <= 0:
        i = int(np.argmax(key(c.logits)))
        keep = c.logits[i]
        c.logits[:] = -np.inf
        c.logits[i] = keep
        return c
    with np.errstate(all="ignore"):   # inf / inf, overflow to inf: as in float arithmetic
        c.logits = (c.logits.astype(np.float64) / t).astype(np.float32)
    return c


def temp_ext(c: Cand, t: float, delta: float, exponent: float) -> Cand:
    if not (delta > 0):
        return temp(c, t)
    if c.size <= 1:
        return c.copy()
    lo = max(0.0, t - delta)
    hi = t + delta
    p = softmax(c.logits)
    norm = entropy(p) / math.log(c.size)
    dyn = lo + (hi - lo) * norm ** exponent
    out = temp(c, dyn)
    out.p = softmax(out.logits)
    return out


def xtc(c: Cand, p: float, t: float, min_keep: int, rng: PCG32) -> Cand:
    """Removes the candidates with probability >= t except the least probable of them."""
    c = c.copy()
    if not (p > 0) or not (t <= 0.5) or c.size < 2:
        return c
    if rng.uniform() >= p:
        return c
    c.p = softmax(c.logits)
    above = np.nonzero(c.p >= t)[0]
    if len(above) < 2 or c.size - (len(above) - 1) < min_keep:
        return c
    k = key(c.logits)[above]
    last = above[np.nonzero(k == k.min())[0][-1]]
    keep = (c.p < t) | (np.arange(c.size) == last)
    out = c.take(np.nonzero(keep)[0])
    out.sorted = c.sorted
    return out


def top_n_sigma(c: Cand, n: float) -> Cand:
    c = c.copy()
    if not (n > 0) or c.size <= 1:
        return c
    k = key(c.logits)
    fin = np.isfinite(c.logits)
    if not fin.any():
        return c
    x = c.logits[fin].astype(np.float64)
    with np.errstate(all="ignore"):   # huge logits overflow float, n = inf: as in C
        sigma = np.float32(np.sqrt(((x - x.mean()) ** 2).mean()))
        thr = np.float32(np.float32(k.max()) - np.float32(n) * sigma)
    c.logits[~(k >= thr)] = -np.inf
    return c


def dist(c: Cand, rng: PCG32) -> Cand:
    c = c.copy()
    if c.size == 0:
        c.selected = -1
        return c
    c.p = softmax(c.logits)
    c.selected = draw(c.p, rng.uniform())
    return c


# ---- stateful samplers ----

class Mirostat:
    """Mirostat v1 (Basu et al. 2021) over tokens."""

    def __init__(self, n_vocab: int, seed: int, tau: float, eta: float, m: int):
        self.n_vocab, self.tau, self.eta, self.m = n_vocab, tau, eta, m
        self.mu = np.float32(2 * tau)
        self.rng = PCG32(seed)

    def apply(self, c: Cand) -> Cand:
        if c.size == 0:
            out = c.copy()
            out.selected = -1
            return out
        p = softmax(c.logits)
        order = desc_order(c.logits)
        ps = p[order].astype(np.float32).astype(np.float64)
        m = min(self.m, c.size) if self.m > 0 else 0
        num = den = 0.0
        used = 0
        for i in range(m - 1):
            if not ps[i + 1] > 0:      # the estimate stops at the first zero probability
                break
            ti = math.log((i + 2) / (i + 1))
            num += ti * math.log(ps[i] / ps[i + 1])
            den += ti * ti
            used = i + 2
        k = float("nan")
        if used >= 2:
            with np.errstate(all="ignore"):
                s_hat = num / den
                eps = s_hat - 1
                nv = self.n_vocab if self.n_vocab > 0 else c.size
                try:
                    k = (eps * 2.0 ** float(self.mu) / (1 - nv ** (-eps))) ** (1 / s_hat)
                except (OverflowError, ZeroDivisionError):
                    k = float("inf")
                if isinstance(k, complex):
                    k = float("nan")
        if math.isnan(k):
            k = c.size
        kk = 1 if k < 1 else (c.size if k >= c.size else int(k))
        out = c.take(desc_order(c.logits)[:kk])
        out.p = softmax(out.logits)
        out.selected = draw(out.p, self.rng.uniform())
        self._update(out)
        return out

    def _update(self, out: Cand) -> None:
        pf = np.float32(out.p[out.selected])
        surprise = np.float32(-np.log2(pf)) if pf > 0 else np.float32(0)
        mu = np.float32(self.mu - np.float32(self.eta) * (surprise - np.float32(self.tau)))
        if np.isfinite(mu):
            self.mu = mu


class MirostatV2(Mirostat):
    def __init__(self, seed: int, tau: float, eta: float):
        super().__init__(0, seed, tau, eta, 0)

    def apply(self, c: Cand) -> Cand:
        if c.size == 0:
            out = c.copy()
            out.selected = -1
            return out
        p = softmax(c.logits).astype(np.float32)
        with np.errstate(divide="ignore"):
            keep = int(((p > 0) & (-np.log2(np.where(p > 0, p, 1)) <= self.mu)).sum())
        out = c.take(desc_order(c.logits)[:max(keep, 1)])
        out.p = softmax(out.logits)
        out.selected = draw(out.p, self.rng.uniform())
        self._update(out)
        return out


class Penalties:
    def __init__(self, last_n: int, repeat: float, freq: float, present: float):
        self.last_n = max(last_n, 0)
        self.repeat = repeat if repeat > 0 else 1.0
        self.freq = freq if math.isfinite(freq) else 0.0
        self.present = present if math.isfinite(present) else 0.0
        self.hist: List[int] = []

    def accept(self, t: int) -> None:
        if self.last_n == 0 or t < 0:
            return
        self.hist.append(t)
        if len(self.hist) > self.last_n:
            self.hist.pop(0)

    def apply(self, c: Cand) -> Cand:
        c = c.copy()
        if not self.hist or (self.repeat == 1 and self.freq == 0 and self.present == 0):
            return c
        counts = {}
        for t in self.hist:
            counts[t] = counts.get(t, 0) + 1
        for i, t in enumerate(c.ids):
            n = counts.get(int(t), 0)
            if n:
                l = np.float32(c.logits[i])
                l = np.float32(l * np.float32(self.repeat)) if l <= 0 else np.float32(l / np.float32(self.repeat))
                l = np.float32(l - (np.float32(n) * np.float32(self.freq) + np.float32(self.present)))
                c.logits[i] = l
        c.sorted = False
        return c


class Dry:
    """DRY by its definition, with a quadratic search (no Z-algorithm): for each earlier
    position j whose token equals the last token, the match length is how many tokens
    before (and including) j equal the tokens at the end of the history; the token that
    followed j would extend that repeat. Matches stop at the latest sequence breaker."""

    def __init__(self, n_vocab: int, multiplier: float, base: float, allowed: int, last_n: int,
                 breakers: Sequence[Sequence[int]]):
        self.n_vocab = n_vocab
        self.multiplier, self.base = multiplier, base
        self.allowed = max(allowed, 1)
        self.limit = 65536 if last_n < 0 else last_n
        self.breakers = [list(b) for b in breakers]
        self.hist: List[int] = []

    def accept(self, t: int) -> None:
        if self.multiplier > 0 and self.base >= 1 and self.limit > 0:
            self.hist.append(t)
            if len(self.hist) > self.limit:
                self.hist.pop(0)

    def rep_limit(self) -> int:
        h = self.hist
        n = len(h)
        for p in range(n - 1, -1, -1):
            for b in self.breakers:
                m = len(b) - 1
                if h[p] == b[0] and p + m <= n - 1 and h[p + 1:p + 1 + m] == b[1:]:
                    return n - 1 - (p + m)
        return n

    def apply(self, c: Cand) -> Cand:
        c = c.copy()
        h = self.hist
        n = len(h)
        if not (self.multiplier > 0 and self.base >= 1 and self.limit > 0) or n < 2 or c.size == 0:
            return c
        lim = self.rep_limit()
        if lim < self.allowed:
            return c
        best = {}
        for j in range(n - 1):             # earlier end position
            L = 0
            while L <= j and h[j - L] == h[n - 1 - L]:
                L += 1
            L = min(L, lim)
            nxt = h[j + 1]
            if L >= self.allowed and 0 <= nxt < self.n_vocab:
                best[nxt] = max(best.get(nxt, 0), L)
        max_exp = math.floor(math.log(np.finfo(np.float32).max) / math.log(self.base)) if self.base > 1 else math.inf
        for i, t in enumerate(c.ids):
            L = best.get(int(t))
            if L:
                e = min(L - self.allowed, max_exp)
                c.logits[i] = np.float32(c.logits[i] - np.float32(self.multiplier * self.base ** e))
                c.sorted = False
        return c


def logit_bias(c: Cand, n_vocab: int, biases) -> Cand:
    c = c.copy()
    total = {}
    for t, b in biases:
        if t < 0 or (n_vocab > 0 and t >= n_vocab) or math.isnan(b):
            continue
        total[t] = np.float32(total.get(t, np.float32(0)) + np.float32(b))
    if not total or c.size == 0:
        return c
    for i, t in enumerate(c.ids):
        if int(t) in total:
            c.logits[i] = np.float32(c.logits[i] + total[int(t)])
    c.sorted = False
    return c


class AdaptiveP:
    """adaptive-p as llama_py documents it (sampling-extra.c)."""

    def __init__(self, target: float, decay: float, seed: int):
        self.target = target
        self.decay = 0.0 if not (decay >= 0) else min(decay, 0.99)
        self.ws = 0.0
        self.tw = 0.0
        self.rng = PCG32(seed)

    def apply(self, c: Cand) -> Cand:
        c = c.copy()
        if c.size == 0:
            c.selected = -1
            return c
        c.p = softmax(c.logits)
        if not (self.target >= 0):
            c.selected = draw(c.p, self.rng.uniform())
            return c
        orig = c.p.astype(np.float32)
        target = min(self.target, 1.0)
        adapted = 2 * target - self.ws / self.tw if self.tw > 0 else target
        adapted = min(max(adapted, 0.0), 1.0)
        d = np.abs(orig.astype(np.float64) - adapted) / 0.3
        g = np.where(d < 1, d * d, 2 * d - 1)
        c.logits = np.where(orig > 0, 5.0 - 10.0 * g, -np.inf).astype(np.float32)
        c.p = softmax(c.logits)
        c.selected = draw(c.p, self.rng.uniform())
        self.ws = self.decay * self.ws + float(orig[c.selected])
        self.tw = self.decay * self.tw + 1.0
        c.sorted = False
        return c
