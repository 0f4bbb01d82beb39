"""Chat prompts for the server: the model's formatter (llama_py._runtime.chat, the one `Llama`
uses) chosen once per model, and messages -> prompt text.

The formatter is: the chat_format the server was started with (a built-in format), else the
model's own template (Jinja in the sandbox, or the built-in format its markers name when jinja2
cannot compile it), else its architecture's format (logged).
"""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Dict, List, Optional, Tuple

from .. import llama_cpp as C
from .._runtime import chat as R
from .._runtime.text import token_text

log = logging.getLogger("llama_py.server")


def _meta(model, key: str) -> str:
    buf = ctypes.create_string_buffer(256)
    n = C.llama_model_meta_val_str(model.handle, key.encode(), buf, len(buf))
    return buf.value.decode("utf-8", errors="replace") if n >= 0 else ""


def model_formatter(model):
    """The formatter the server lays this model's chats out with."""
    if model.chat_format:
        if model.chat_format in R.BUILTIN:
            return R.builtin_formatter(model.chat_format)
        return R.BuiltinChatFormatter(model.chat_format)  # an engine template name (llama_chat_apply_template)
    tmpl = C.llama_model_chat_template(model.handle, None)
    if tmpl:
        eos = C.llama_vocab_eos(model.vocab)
        return R.template_formatter(tmpl.decode("utf-8", errors="replace"), token_text(model.vocab, C.llama_vocab_bos(model.vocab)),
                                    token_text(model.vocab, eos), eos)
    return R.builtin_formatter(R.fallback_format(_meta(model, "general.architecture")))


def render_chat(model, messages: List[Dict[str, Any]], tools: Optional[list] = None,
                tool_choice: Any = None) -> Tuple[str, bool, List[str]]:
    """(prompt text, whether tokenizing should add BOS itself, the format's stop strings).
    ValueError when the template refuses the messages (its raise_exception); a template that
    fails otherwise (broken, or stopped by the sandbox) is logged and the built-in layout used."""
    fmt = model.formatter()
    try:
        r = fmt(messages=messages, tools=tools, tool_choice=tool_choice)
    except ValueError as e:  # the template's own raise_exception: the messages are wrong for it
        raise ValueError(f"the model's chat template refused the messages: {e}")
    except Exception as e:
        if not isinstance(fmt, R.Jinja2ChatFormatter):
            raise
        log.warning("chat template failed (%s: %s); using the built-in format", type(e).__name__, e)
        r = R.BuiltinChatFormatter(fmt.template)(messages=messages)
    stops = r.stop if isinstance(r.stop, list) else [r.stop] if r.stop else []
    return r.prompt, not r.added_special, [s for s in stops if s]
