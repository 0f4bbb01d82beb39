"""Chat prompts: the model's Jinja chat template rendered in jinja2's sandbox, named formats,
and the chat-completion handlers Llama.create_chat_completion calls (as llama-cpp-python's
`llama_cpp.llama_chat_format`).

Templates run in `jinja2.sandbox.ImmutableSandboxedEnvironment`: no attribute that reaches
Python internals (`__class__`, `__globals__`, ...), no mutation of the data handed in, so a
hostile template in a downloaded model (the CVE-2024-34359 payloads) raises
jinja2.exceptions.SecurityError instead of running code. Templates get what Hugging Face
templates expect: messages, bos_token, eos_token, add_generation_prompt, tools, tool_choice,
functions, raise_exception, strftime_now, and a tojson filter that keeps non-ASCII text.

Named formats (chat_format=...) are laid out by the engine's built-in templates
(llama_chat_apply_template): chatml, llama-2, llama-3, mistral-instruct, zephyr, gemma,
phi-3, qwen, chatml-function-calling, and the C names themselves.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import json
from datetime import datetime
from typing import Any, Dict, Iterator, List, Optional, Protocol, Tuple, Union

from . import llama_cpp as C
from . import llama_types

# ---- rendering ----


def _tojson(x: Any, ensure_ascii: bool = False, indent: Optional[int] = None,
            separators: Optional[Tuple[str, str]] = None, sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(f: str) -> str:
    return datetime.now().strftime(f)


def _raise_exception(message: str):
    raise ValueError(message)


@functools.lru_cache(maxsize=None)
def _environment():
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@functools.lru_cache(maxsize=64)
def _compiled(template: str):
    return _environment().from_string(template)


def format_chat(messages: List[Dict[str, Any]], template: str, bos_token: str = "", eos_token: str = "",
                add_generation_prompt: bool = True, tools: Optional[List[Dict[str, Any]]] = None, **extra: Any) -> str:
    """Renders a Jinja chat template in the immutable sandbox (raises jinja2's SecurityError on
    an escape attempt, ValueError from the template's raise_exception)."""
    return _compiled(template).render(messages=messages, bos_token=bos_token, eos_token=eos_token,
                                      add_generation_prompt=add_generation_prompt, tools=tools, **extra)


# ---- formatter and handler protocols ----


@dataclasses.dataclass
class ChatFormatterResponse:
    """A laid-out prompt; added_special: it already holds the leading special tokens (no BOS to add)."""
    prompt: str
    stop: Optional[Union[str, List[str]]] = None
    stopping_criteria: Optional[Any] = None
    added_special: bool = False


class ChatFormatter(Protocol):
    def __call__(self, *, messages: List[llama_types.ChatCompletionRequestMessage], **kwargs: Any) -> ChatFormatterResponse:
        ...


class LlamaChatCompletionHandler(Protocol):
    """Called by Llama.create_chat_completion with llama= and every argument it got, by keyword."""

    def __call__(self, *, llama: Any, messages: List[llama_types.ChatCompletionRequestMessage],
                 functions: Optional[List[llama_types.ChatCompletionFunction]] = None,
                 function_call: Optional[llama_types.ChatCompletionRequestFunctionCall] = None,
                 tools: Optional[List[llama_types.ChatCompletionTool]] = None,
                 tool_choice: Optional[llama_types.ChatCompletionToolChoiceOption] = None,
                 temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40, stream: bool = False,
                 stop: Optional[Union[str, List[str]]] = [], seed: Optional[int] = None,
                 response_format: Optional[llama_types.ChatCompletionRequestResponseFormat] = None,
                 max_tokens: Optional[int] = None, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 repeat_penalty: float = 1.1, model: Optional[str] = None, logit_bias: Optional[Dict[str, float]] = None,
                 min_p: float = 0.05, typical_p: float = 1.0, tfs_z: float = 1.0, mirostat_mode: int = 0,
                 mirostat_tau: float = 5.0, mirostat_eta: float = 0.1, logits_processor: Optional[Any] = None,
                 grammar: Optional[Any] = None, logprobs: Optional[bool] = None, top_logprobs: Optional[int] = None,
                 **kwargs: Any) -> Union[llama_types.CreateChatCompletionResponse,
                                         Iterator[llama_types.CreateChatCompletionStreamResponse]]:
        ...


class LlamaChatCompletionHandlerNotFoundException(Exception):
    pass


class LlamaChatCompletionHandlerRegistry:
    """Name -> chat completion handler (one registry per process)."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._handlers = {}
        return cls._instance

    def register_chat_completion_handler(self, name: str, chat_handler: LlamaChatCompletionHandler,
                                         overwrite: bool = False):
        if not overwrite and name in self._handlers:
            raise ValueError(f"chat completion handler {name!r} is already registered; pass overwrite=True")
        self._handlers[name] = chat_handler

    def unregister_chat_handler(self, name: str):
        if name not in self._handlers:
            raise ValueError(f"no chat completion handler {name!r}")
        del self._handlers[name]

    def get_chat_completion_handler_by_name(self, name: str) -> LlamaChatCompletionHandler:
        try:
            return self._handlers[name]
        except KeyError:
            raise LlamaChatCompletionHandlerNotFoundException(
                f"Invalid chat handler: {name} (known: {', '.join(sorted(self._handlers))})") from None


def get_chat_completion_handler(name: str) -> LlamaChatCompletionHandler:
    return LlamaChatCompletionHandlerRegistry().get_chat_completion_handler_by_name(name)


def register_chat_completion_handler(name: str):
    def decorator(f: LlamaChatCompletionHandler):
        LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(name, f, overwrite=True)
        return f
    return decorator


# ---- the Jinja formatter ----


class Jinja2ChatFormatter:
    """A chat template (Jinja text) as a formatter. A prompt that starts with the BOS text is
    marked added_special (tokenized without adding another BOS); otherwise the tokenizer adds
    the BOS token where the model wants one."""

    def __init__(self, template: str, eos_token: str, bos_token: str, add_generation_prompt: bool = True,
                 stop_token_ids: Optional[List[int]] = None):
        self.template = template
        self.eos_token = eos_token
        self.bos_token = bos_token
        self.add_generation_prompt = add_generation_prompt
        self.stop_token_ids = set(stop_token_ids) if stop_token_ids is not None else None
        self._environment = _compiled(template)  # compile now: a broken template fails at load

    strftime_now = staticmethod(_strftime_now)
    tojson = staticmethod(_tojson)

    def __call__(self, *, messages: List[llama_types.ChatCompletionRequestMessage],
                 functions: Optional[List[llama_types.ChatCompletionFunction]] = None,
                 function_call: Optional[llama_types.ChatCompletionRequestFunctionCall] = None,
                 tools: Optional[List[llama_types.ChatCompletionTool]] = None,
                 tool_choice: Optional[llama_types.ChatCompletionToolChoiceOption] = None,
                 **kwargs: Any) -> ChatFormatterResponse:
        extra = dict(kwargs)
        add = extra.pop("add_generation_prompt", self.add_generation_prompt)
        prompt = format_chat(list(messages), self.template, self.bos_token, self.eos_token, add, tools,
                             functions=functions, function_call=function_call, tool_choice=tool_choice, **extra)
        # a template that writes the BOS text has added the special tokens itself: no second BOS
        added = bool(self.bos_token) and prompt.startswith(self.bos_token)
        stopping = None
        if self.stop_token_ids:
            ids = self.stop_token_ids

            def stop_on_token(tokens, logits) -> bool:
                return len(tokens) > 0 and int(tokens[-1]) in ids
            from .llama import StoppingCriteriaList
            stopping = StoppingCriteriaList([stop_on_token])
        return ChatFormatterResponse(prompt=prompt, stop=[self.eos_token] if self.eos_token else [],
                                     stopping_criteria=stopping, added_special=added)

    def to_chat_handler(self) -> LlamaChatCompletionHandler:
        return chat_formatter_to_chat_completion_handler(self)


# ---- named formats through the engine's built-in templates ----

# llama-cpp-python's names (and a few more) -> the engine's template name, and the end-of-turn text
_BUILTIN = {
    "chatml": ("chatml", "<|im_end|>"), "qwen": ("chatml", "<|im_end|>"),
    "chatml-function-calling": ("chatml", "<|im_end|>"),
    "llama-2": ("llama2", "</s>"), "llama2": ("llama2", "</s>"), "llama2-sys": ("llama2-sys", "</s>"),
    "llama-3": ("llama3", "<|eot_id|>"), "llama3": ("llama3", "<|eot_id|>"),
    "mistral-instruct": ("mistral-v1", "</s>"), "mistral-v1": ("mistral-v1", "</s>"),
    "mistral-v3": ("mistral-v3", "</s>"), "mistral-v7": ("mistral-v7", "</s>"), "mistral": ("mistral-v1", "</s>"),
    "zephyr": ("zephyr", "</s>"), "gemma": ("gemma", "<end_of_turn>"),
    "phi-3": ("phi3", "<|end|>"), "phi3": ("phi3", "<|end|>"),
}


def _message_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def apply_builtin_template(template: Union[str, bytes], messages: List[Dict[str, Any]],
                           add_generation_prompt: bool = True) -> str:
    """Lays messages out with llama_chat_apply_template: template is a built-in name or a model's
    template text, recognised among the built-in formats by its markers (never executed)."""
    tmpl = template.encode("utf-8") if isinstance(template, str) else template
    arr = (C.llama_chat_message * max(1, len(messages)))()
    keep = []
    for i, m in enumerate(messages):
        role, content = m["role"].encode("utf-8"), _message_text(m.get("content")).encode("utf-8")
        keep += [role, content]
        arr[i].role, arr[i].content = role, content
    n = C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, None, 0)
    if n < 0:
        raise ValueError("the chat template is not one of the built-in formats "
                         "(chatml, llama2, llama3, zephyr, mistral, phi3, gemma, ...); pass chat_format=")
    buf = ctypes.create_string_buffer(n + 1)
    C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, buf, n + 1)
    return buf.raw[:n].decode("utf-8")


class BuiltinChatFormatter:
    """A named built-in format (or a template recognised by its markers) as a formatter."""

    def __init__(self, template: Union[str, bytes], stop: Optional[str] = None):
        self.template = template
        self.stop = stop

    def __call__(self, *, messages, add_generation_prompt: bool = True, **kwargs: Any) -> ChatFormatterResponse:
        return ChatFormatterResponse(prompt=apply_builtin_template(self.template, list(messages),
                                                                   add_generation_prompt),
                                     stop=[self.stop] if self.stop else [], added_special=False)


def builtin_formatter(name: str) -> BuiltinChatFormatter:
    """The formatter of a named format; ValueError naming the known ones otherwise."""
    if name not in _BUILTIN:
        raise ValueError(f"chat_format {name!r} is not supported by llama_py; known: {', '.join(sorted(_BUILTIN))} "
                         "(or pass chat_handler=, or rely on the model's own template)")
    c_name, stop = _BUILTIN[name]
    return BuiltinChatFormatter(c_name, stop)


def register_chat_format(name: str):
    """Decorator: registers a formatter function (messages=..., **kw) -> ChatFormatterResponse under name."""
    def decorator(f: ChatFormatter):
        LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
            name, chat_formatter_to_chat_completion_handler(f), overwrite=True)
        return f
    return decorator


def guess_chat_format_from_gguf_metadata(metadata: Dict[str, str]) -> Optional[str]:
    """A format name for the model's template, from its markers; None when unrecognised."""
    t = metadata.get("tokenizer.chat_template", "")
    for marker, name in (("<|im_start|>", "chatml"), ("<|start_header_id|>", "llama-3"),
                         ("<start_of_turn>", "gemma"), ("<|assistant|>", "zephyr"), ("[INST]", "mistral-instruct")):
        if marker in t:
            return name
    return None


def hf_tokenizer_config_to_chat_formatter(tokenizer_config: Dict[str, Any],
                                          add_generation_prompt: bool = True) -> ChatFormatter:
    """A Hugging Face tokenizer_config.json (as a dict) as a formatter."""
    def text(tok):
        return tok.get("content", "") if isinstance(tok, dict) else (tok or "")
    return Jinja2ChatFormatter(tokenizer_config["chat_template"], eos_token=text(tokenizer_config.get("eos_token")),
                               bos_token=text(tokenizer_config.get("bos_token")),
                               add_generation_prompt=add_generation_prompt)


def hf_tokenizer_config_to_chat_completion_handler(tokenizer_config: Dict[str, Any],
                                                   add_generation_prompt: bool = True) -> LlamaChatCompletionHandler:
    return chat_formatter_to_chat_completion_handler(
        hf_tokenizer_config_to_chat_formatter(tokenizer_config, add_generation_prompt))


def hf_autotokenizer_to_chat_formatter(pretrained_model_name_or_path: str) -> ChatFormatter:
    """A local Hugging Face tokenizer folder's chat template as a formatter (needs transformers)."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(pretrained_model_name_or_path)

    def format_autotokenizer(*, messages, **kwargs):
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        added = bool(tok.bos_token) and prompt.startswith(tok.bos_token)
        return ChatFormatterResponse(prompt=prompt, stop=[tok.eos_token] if tok.eos_token else [], added_special=added)
    return format_autotokenizer


def hf_autotokenizer_to_chat_completion_handler(pretrained_model_name_or_path: str) -> LlamaChatCompletionHandler:
    return chat_formatter_to_chat_completion_handler(hf_autotokenizer_to_chat_formatter(pretrained_model_name_or_path))


# ---- from a formatter to a handler: prompt, grammar, completion, chat-shaped result ----


def _grammar_module():
    try:
        from . import grammar
    except ImportError as e:
        raise NotImplementedError("response_format / tool_choice need llama_py.grammar, absent from this build") from e
    return grammar


def _constraint(response_format, tools, tool_choice):
    """(grammar, tool mode): tool mode None, a tool name, or "required" (any of the tools)."""
    if response_format and response_format.get("type") in ("json_object", "json_schema"):
        schema = response_format.get("schema")
        if schema is None and isinstance(response_format.get("json_schema"), dict):
            schema = response_format["json_schema"].get("schema")
        g = _grammar_module()
        if schema is None:
            return g.LlamaGrammar.from_string(g.JSON_GBNF, verbose=False), None
        return g.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False), None
    if tools and isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        tool = next((t for t in tools if t["function"]["name"] == name), None)
        if tool is None:
            raise ValueError(f"Tool choice '{name}' not found in tools.")
        params = tool["function"].get("parameters") or {"type": "object"}
        return _grammar_module().LlamaGrammar.from_json_schema(json.dumps(params), verbose=False), name
    if tools and tool_choice == "required":
        schema = {"anyOf": [{"type": "object", "properties": {
            "name": {"const": t["function"]["name"]},
            "arguments": t["function"].get("parameters") or {"type": "object"}},
            "required": ["name", "arguments"]} for t in tools]}
        return _grammar_module().LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False), "required"
    return None, None


def _chat_logprobs(lp: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if not lp or not lp.get("tokens"):
        return None
    content = []
    for tok, logprob, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        content.append({"token": tok, "logprob": logprob, "bytes": list(tok.encode("utf-8")),
                        "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))}
                                         for t, v in (top or {}).items()]})
    return {"content": content, "refusal": None}


def _tool_call(mode: str, text: str, call_id: str) -> Dict[str, Any]:
    if mode == "required":
        obj = json.loads(text)
        name, args = obj["name"], json.dumps(obj["arguments"], ensure_ascii=False)
    else:
        name, args = mode, text
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def _to_chat(completion: Dict[str, Any], tool_mode: Optional[str]) -> Dict[str, Any]:
    choice = completion["choices"][0]
    msg: Dict[str, Any] = {"role": "assistant", "content": choice["text"]}
    finish = choice["finish_reason"]
    if tool_mode is not None:
        call = _tool_call(tool_mode, choice["text"], "call_" + completion["id"])
        msg = {"role": "assistant", "content": None, "function_call": dict(call["function"]), "tool_calls": [call]}
        finish = "tool_calls"
    return {"id": "chat" + completion["id"], "object": "chat.completion", "created": completion["created"],
            "model": completion["model"],
            "choices": [{"index": 0, "message": msg, "logprobs": _chat_logprobs(choice["logprobs"]),
                         "finish_reason": finish}],
            "usage": completion["usage"]}


def _to_chat_chunks(chunks: Iterator[Dict[str, Any]], tool_mode: Optional[str]) -> Iterator[Dict[str, Any]]:
    first = True
    args = ""
    for c in chunks:
        choice = c["choices"][0]
        head = {"id": "chat" + c["id"], "model": c["model"], "created": c["created"], "object": "chat.completion.chunk"}
        if first:
            first = False
            yield dict(head, choices=[{"index": 0, "delta": {"role": "assistant"}, "logprobs": None,
                                       "finish_reason": None}])
        if choice["finish_reason"] is None:
            if not choice["text"]:
                continue
            if tool_mode is not None:
                args += choice["text"]
                continue
            yield dict(head, choices=[{"index": 0, "delta": {"content": choice["text"]},
                                       "logprobs": _chat_logprobs(choice["logprobs"]), "finish_reason": None}])
            continue
        finish = choice["finish_reason"]
        if tool_mode is not None:
            call = _tool_call(tool_mode, args, "call_" + c["id"])
            yield dict(head, choices=[{"index": 0, "delta": {"role": None, "content": None, "tool_calls": [
                dict(call, index=0)]}, "logprobs": None, "finish_reason": None}])
            finish = "tool_calls"
        out = dict(head, choices=[{"index": 0, "delta": {}, "logprobs": _chat_logprobs(choice["logprobs"]),
                                   "finish_reason": finish}])
        if "usage" in c:
            out["usage"] = c["usage"]
        yield out


def chat_formatter_to_chat_completion_handler(chat_formatter: ChatFormatter) -> LlamaChatCompletionHandler:
    """The handler that lays messages out with chat_formatter and completes the prompt."""

    def chat_completion_handler(*, llama: Any, messages, functions=None, function_call=None, tools=None,
                                tool_choice=None, temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40,
                                min_p: float = 0.05, typical_p: float = 1.0, stream: bool = False, stop=[],
                                seed: Optional[int] = None, response_format=None, max_tokens: Optional[int] = None,
                                presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                                repeat_penalty: float = 1.0, tfs_z: float = 1.0, mirostat_mode: int = 0,
                                mirostat_tau: float = 5.0, mirostat_eta: float = 0.1, model: Optional[str] = None,
                                logits_processor=None, grammar=None, logit_bias=None, logprobs: Optional[bool] = None,
                                top_logprobs: Optional[int] = None, **kwargs: Any):
        if functions and not tools:  # the legacy names
            tools = [{"type": "function", "function": f} for f in functions]
        if function_call is not None and tool_choice is None:
            tool_choice = function_call if isinstance(function_call, str) else \
                {"type": "function", "function": {"name": function_call["name"]}}
        result = chat_formatter(messages=messages, functions=functions, function_call=function_call, tools=tools,
                                tool_choice=tool_choice)
        tokens = llama.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        extra = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
        stops += [s for s in extra if s and s not in stops]
        tool_mode = None
        if grammar is None:
            grammar, tool_mode = _constraint(response_format, tools, tool_choice)
        completion = llama.create_completion(
            prompt=tokens, temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p, typical_p=typical_p,
            logprobs=(top_logprobs or 0) if logprobs else None, stream=stream, stop=stops, seed=seed,
            max_tokens=max_tokens, presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
            repeat_penalty=repeat_penalty, tfs_z=tfs_z, mirostat_mode=mirostat_mode, mirostat_tau=mirostat_tau,
            mirostat_eta=mirostat_eta, model=model, stopping_criteria=result.stopping_criteria,
            logits_processor=logits_processor, grammar=grammar, logit_bias=logit_bias)
        if stream:
            return _to_chat_chunks(completion, tool_mode)
        return _to_chat(completion, tool_mode)

    chat_completion_handler.chat_formatter = chat_formatter  # type: ignore[attr-defined]
    return chat_completion_handler


for _name, (_c_name, _stop) in _BUILTIN.items():
    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        _name, chat_formatter_to_chat_completion_handler(BuiltinChatFormatter(_c_name, _stop)), overwrite=True)
