"""OpenAI request bodies: validation (every error names its field) and response shapes.

Validation is strict about types and ranges (a bool is not an integer, NaN is not a number)
and lenient about unknown fields, which clients add freely.
"""
from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

MAX_N = 16           # choices per request
MAX_STOP = 16        # stop strings per request
MAX_LOGPROBS = 20    # alternatives per token
MAX_INPUTS = 256     # embedding / prompt list entries


class RequestError(Exception):
    """An error answered as OpenAI's {"error": {...}} with an HTTP status."""

    def __init__(self, status: int, message: str, param: Optional[str] = None,
                 type: str = "invalid_request_error", code: Optional[str] = None,
                 headers: Optional[Dict[str, str]] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.type = type
        self.code = code
        self.headers = headers or {}

    def body(self) -> Dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(param: str, message: str) -> RequestError:
    return RequestError(400, f"{param}: {message}", param=param)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(data: bytes) -> Dict[str, Any]:
    """The body as a JSON object, or a 400 saying what is wrong with it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(400, f"the body is not UTF-8 (byte {e.start})")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise RequestError(400, f"the body is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}")
    except (ValueError, RecursionError) as e:
        raise RequestError(400, f"the body is not valid JSON: {e}")
    if not isinstance(obj, dict):
        raise RequestError(400, f"the body must be a JSON object, not {type(obj).__name__}")
    return obj


# ---- field readers ----

def get_int(body: dict, name: str, default: Optional[int], lo: Optional[int] = None, hi: Optional[int] = None,
            nullable: bool = True) -> Optional[int]:
    v = body.get(name, default)
    if v is None:
        if name in body and not nullable:
            raise bad(name, "must be an integer, not null")
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise bad(name, f"must be an integer, got {_kind(v)}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise bad(name, f"must be in [{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}], got {v}")
    return v


def get_num(body: dict, name: str, default: Optional[float], lo: Optional[float] = None,
            hi: Optional[float] = None, lo_open: bool = False) -> Optional[float]:
    v = body.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise bad(name, f"must be a number, got {_kind(v)}")
    if (lo is not None and (v < lo or (lo_open and v == lo))) or (hi is not None and v > hi):
        lb = "(" if lo_open else "["
        raise bad(name, f"must be in {lb}{lo}, {hi if hi is not None else 'inf'}], got {v}")
    return float(v)


def get_bool(body: dict, name: str, default: bool) -> bool:
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise bad(name, f"must be a boolean, got {_kind(v)}")
    return v


def get_str(body: dict, name: str, default: Optional[str] = None) -> Optional[str]:
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise bad(name, f"must be a string, got {_kind(v)}")
    return v


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v!r}" if not isinstance(v, float) or math.isfinite(v) else "a non-finite number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def get_stop(body: dict) -> List[str]:
    v = body.get("stop")
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v else []
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise bad("stop", f"must be a string or an array of strings, got {_kind(v)}")
    if len(v) > MAX_STOP:
        raise bad("stop", f"at most {MAX_STOP} stop strings, got {len(v)}")
    return [s for s in v if s]


def get_logit_bias(body: dict, n_vocab: int) -> Optional[Dict[int, float]]:
    v = body.get("logit_bias")
    if v is None:
        return None
    if not isinstance(v, dict):
        raise bad("logit_bias", f"must be an object mapping token ids to numbers, got {_kind(v)}")
    out = {}
    for k, b in v.items():
        try:
            t = int(k)
        except ValueError:
            raise bad("logit_bias", f"key {k!r} is not a token id")
        if not 0 <= t < n_vocab:
            raise bad("logit_bias", f"token id {t} is out of range [0, {n_vocab})")
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or not -100 <= b <= 100:
            raise bad("logit_bias", f"bias of token {t} must be a number in [-100, 100], got {_kind(b)}")
        out[t] = float(b)
    return out


def get_token_list(v: Any, name: str, n_vocab: int) -> List[int]:
    if not isinstance(v, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in v):
        raise bad(name, "must be an array of token ids (integers)")
    for t in v:
        if not 0 <= t < n_vocab:
            raise bad(name, f"token id {t} is out of range [0, {n_vocab})")
    return v


def get_prompts(v: Any, name: str, n_vocab: int) -> List[Any]:
    """A prompt field: a string, an array of strings, an array of token ids, or an array of those;
    returns a list of prompts, each a str or a list of token ids."""
    if v is None:
        raise bad(name, "is required")
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list):
        raise bad(name, f"must be a string, an array of strings or an array of token ids, got {_kind(v)}")
    if not v:
        raise bad(name, "must not be empty")
    if all(isinstance(t, int) and not isinstance(t, bool) for t in v):
        return [get_token_list(v, name, n_vocab)]
    if len(v) > MAX_INPUTS:
        raise bad(name, f"at most {MAX_INPUTS} entries, got {len(v)}")
    out = []
    for i, p in enumerate(v):
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, list):
            out.append(get_token_list(p, f"{name}[{i}]", n_vocab))
        else:
            raise bad(f"{name}[{i}]", f"must be a string or an array of token ids, got {_kind(p)}")
    return out


@dataclass
class GenParams:
    """What a completion or chat request asks for, validated."""
    max_tokens: Optional[int] = None
    temperature: float = 1.0
    top_k: int = 40
    top_p: float = 1.0
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    penalty_last_n: int = 64
    mirostat_mode: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    seed: Optional[int] = None
    stop: List[str] = field(default_factory=list)
    n: int = 1
    stream: bool = False
    include_usage: bool = False
    logprobs: Optional[int] = None
    logit_bias: Optional[Dict[int, float]] = None
    ignore_eos: bool = False
    special: bool = False            # control tokens rendered in the text (harmony chats parse them)
    lora: Optional[Dict[int, float]] = None  # LoRA adapter id -> scale (llama-server's `lora` field)


def parse_gen_params(body: dict, n_vocab: int, chat: bool) -> GenParams:
    """The sampling and output fields shared by /v1/completions and /v1/chat/completions."""
    p = GenParams()
    mt_name = "max_completion_tokens" if chat and body.get("max_completion_tokens") is not None else "max_tokens"
    # completions: 0 generates nothing (with echo and logprobs: scores the prompt)
    p.max_tokens = get_int(body, mt_name, None if chat else 16, lo=1 if chat else 0)
    p.temperature = get_num(body, "temperature", 1.0, 0.0, 2.0)
    p.top_p = get_num(body, "top_p", 1.0, 0.0, 1.0)
    p.top_k = get_int(body, "top_k", 40, lo=0, hi=1 << 20)
    p.min_p = get_num(body, "min_p", 0.05, 0.0, 1.0)
    p.typical_p = get_num(body, "typical_p", 1.0, 0.0, 1.0)
    p.repeat_penalty = get_num(body, "repeat_penalty", 1.0, 0.0, 10.0, lo_open=True)
    # llama.cpp's server names the window repeat_last_n; llama-cpp-python's Llama last_n_tokens_size
    last_n_name = "last_n_tokens_size" if body.get("last_n_tokens_size") is not None else "repeat_last_n"
    p.penalty_last_n = get_int(body, last_n_name, 64, lo=-1, hi=1 << 24)
    # mirostat is llama.cpp's server name, mirostat_mode llama-cpp-python's
    mode_name = "mirostat_mode" if body.get("mirostat_mode") is not None else "mirostat"
    p.mirostat_mode = get_int(body, mode_name, 0, lo=0, hi=2)
    p.mirostat_tau = get_num(body, "mirostat_tau", 5.0, 0.0, 100.0)
    p.mirostat_eta = get_num(body, "mirostat_eta", 0.1, 0.0, 1.0)
    p.frequency_penalty = get_num(body, "frequency_penalty", 0.0, -2.0, 2.0)
    p.presence_penalty = get_num(body, "presence_penalty", 0.0, -2.0, 2.0)
    p.seed = get_int(body, "seed", None, lo=-(1 << 63), hi=(1 << 64) - 1)
    p.stop = get_stop(body)
    p.n = get_int(body, "n", 1, lo=1, hi=MAX_N)
    p.stream = get_bool(body, "stream", False)
    so = body.get("stream_options")
    if so is not None:
        if not isinstance(so, dict):
            raise bad("stream_options", f"must be an object, got {_kind(so)}")
        p.include_usage = get_bool(so, "include_usage", False)
    if chat:
        if get_bool(body, "logprobs", False):
            p.logprobs = get_int(body, "top_logprobs", 0, lo=0, hi=MAX_LOGPROBS)
        elif body.get("top_logprobs") is not None:
            raise bad("top_logprobs", "needs logprobs: true")
    else:
        p.logprobs = get_int(body, "logprobs", None, lo=0, hi=MAX_LOGPROBS)
    p.logit_bias = get_logit_bias(body, n_vocab)
    p.ignore_eos = get_bool(body, "ignore_eos", False)
    if body.get("lora") is not None:
        from .lora import parse_lora_request
        try:
            p.lora = parse_lora_request(body["lora"])
        except ValueError as e:
            raise RequestError(400, str(e), param="lora")
    get_str(body, "user")
    best_of = get_int(body, "best_of", None, lo=1, hi=MAX_N)
    if best_of is not None and best_of != p.n:
        raise bad("best_of", "only best_of = n is supported")
    if body.get("suffix") is not None:
        raise bad("suffix", "is not supported (no fill-in-the-middle)")
    return p


_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def parse_messages(body: dict) -> List[Dict[str, Any]]:
    v = body.get("messages")
    if v is None:
        raise bad("messages", "is required")
    if not isinstance(v, list) or not v:
        raise bad("messages", "must be a non-empty array of messages")
    out = []
    for i, m in enumerate(v):
        name = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad(name, f"must be an object, got {_kind(m)}")
        role = m.get("role")
        if role not in _ROLES:
            raise bad(f"{name}.role", f"must be one of {', '.join(_ROLES)}, got {role!r}")
        c = m.get("content")
        if c is not None and not isinstance(c, str):
            if not isinstance(c, list):
                raise bad(f"{name}.content", f"must be a string or an array of content parts, got {_kind(c)}")
            for j, part in enumerate(c):
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    raise bad(f"{name}.content[{j}]", "must be an object with a type")
                if part["type"] == "text" and not isinstance(part.get("text"), str):
                    raise bad(f"{name}.content[{j}].text", "must be a string")
                if part["type"] != "text":
                    raise bad(f"{name}.content[{j}].type", f"{part['type']!r} parts are not supported (text only)")
        if c is None and role in ("system", "developer", "user"):
            raise bad(f"{name}.content", "is required for this role")
        out.append(m)
    return out


# ---- response shapes ----

def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


def completion_logprobs(items: List[Tuple[str, float, Optional[list]]], offset0: int) -> Dict[str, Any]:
    """Completions' logprobs object from (token text, logprob, [(alt text, logprob)]) entries."""
    tokens, lps, tops, offs = [], [], [], []
    off = offset0
    for text, lp, top in items:
        tokens.append(text)
        lps.append(lp)
        tops.append({t: l for t, l in top} if top is not None else None)
        offs.append(off)
        off += len(text)
    return {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs}
