"""Chat prompts: messages -> prompt text with the model's chat template.

The template itself is rendered by llama_py.llama_chat_format (sandboxed Jinja) when that
module is present; otherwise llama_chat_apply_template lays the messages out in the built-in
format the template is recognised as (chatml when the model has none).
"""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Dict, List, Optional, Tuple

from .. import llama_cpp as C

_DEFAULT_TEMPLATE = b"chatml"
log = logging.getLogger("llama_py.server")


def message_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _token_text(vocab, tok: int) -> str:
    if tok < 0:
        return ""
    t = C.llama_vocab_get_text(vocab, tok)
    return t.decode("utf-8", errors="replace") if t else ""


def render_chat(model, messages: List[Dict[str, Any]], tools: Optional[list] = None) -> Tuple[str, bool]:
    """(prompt text, whether tokenizing should add BOS itself)."""
    tmpl = None
    if not model.chat_format:
        tmpl = C.llama_model_chat_template(model.handle, None)
    try:
        from ..llama_chat_format import format_chat  # another helper's module; optional until merged
    except ImportError:
        format_chat = None
    if format_chat is not None and tmpl:
        bos = _token_text(model.vocab, C.llama_vocab_bos(model.vocab))
        eos = _token_text(model.vocab, C.llama_vocab_eos(model.vocab))
        msgs = [dict(m, content=message_text(m.get("content"))) for m in messages]
        try:
            text = format_chat(msgs, tmpl.decode("utf-8", errors="replace"), bos, eos,
                               add_generation_prompt=True, tools=tools)
        except ValueError as e:  # the template's own raise_exception: the messages are wrong for it
            raise ValueError(f"the model's chat template refused the messages: {e}")
        except Exception as e:  # a broken or hostile template (sandbox): the built-in layout instead
            log.warning("chat template failed (%s: %s); using the built-in format", type(e).__name__, e)
        else:
            return text, not (bos and text.startswith(bos))
    name = model.chat_format.encode() if model.chat_format else (tmpl or _DEFAULT_TEMPLATE)
    arr = (C.llama_chat_message * max(1, len(messages)))()
    keep = []
    for i, m in enumerate(messages):
        role = str(m.get("role", "user")).encode("utf-8")
        content = message_text(m.get("content")).encode("utf-8")
        keep += [role, content]
        arr[i].role, arr[i].content = role, content
    n = C.llama_chat_apply_template(name, arr, len(messages), True, None, 0)
    if n < 0:
        raise ValueError("the model's chat template is not one of the built-in formats "
                         "(chatml, llama2, llama3, zephyr, mistral, phi3, gemma, ...)")
    buf = ctypes.create_string_buffer(n + 1)
    C.llama_chat_apply_template(name, arr, len(messages), True, buf, n + 1)
    return buf.raw[:n].decode("utf-8", errors="replace"), True
