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

import logging
from typing import Any, Dict, Iterator, List, Optional, Protocol, Union

from . import llama_types
from ._runtime import chat as R
# the rendering and formatters live in the runtime, shared with the server; their public names here
from ._runtime.chat import (BuiltinChatFormatter, ChatFormatterResponse, Jinja2ChatFormatter,  # noqa: F401
                            apply_builtin_template, builtin_formatter, format_chat)

_BUILTIN = R.BUILTIN

log = logging.getLogger("llama_py")


# ---- formatter and handler protocols ----


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
    """A Hugging Face tokenizer_config.json (as a dict) as a formatter, as llama-cpp-python makes
    it: add_generation_prompt appends a blank assistant message (rendered by the template itself)
    and the prompt counts as holding its special tokens."""
    def text(tok):
        return tok.get("content", "") if isinstance(tok, dict) else (tok or "")
    template = tokenizer_config["chat_template"]
    eos, bos = text(tokenizer_config.get("eos_token")), text(tokenizer_config.get("bos_token"))
    R.compiled(template)  # a broken template fails here, not at the first chat

    def format_tokenizer_config(messages: List[llama_types.ChatCompletionRequestMessage],
                                **kwargs: Any) -> ChatFormatterResponse:
        msgs = list(messages) + ([{"role": "assistant", "content": ""}] if add_generation_prompt else [])
        kwargs.pop("add_generation_prompt", None)
        tools = kwargs.pop("tools", None)
        prompt = format_chat(msgs, template, bos, eos, False, tools, **kwargs)
        return ChatFormatterResponse(prompt=prompt, stop=[eos, bos], added_special=True)
    return format_tokenizer_config


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


def _completion_logprobs(lp: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if not lp or not lp.get("tokens"):
        return None
    return R.chat_logprobs(list(zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])))


def _to_chat(completion: Dict[str, Any], tool_mode: Optional[str]) -> Dict[str, Any]:
    choice = completion["choices"][0]
    if tool_mode == "harmony":
        msg, finish = R.harmony_message(choice["text"], choice["finish_reason"], "call_" + completion["id"])
    else:
        msg, finish = R.chat_message(choice["text"], choice["finish_reason"], tool_mode, "call_" + completion["id"])
    return {"id": "chat" + completion["id"], "object": "chat.completion", "created": completion["created"],
            "model": completion["model"],
            "choices": [{"index": 0, "message": msg, "logprobs": _completion_logprobs(choice["logprobs"]),
                         "finish_reason": finish}],
            "usage": completion["usage"]}


def _rendering_special(llama: Any, chunks: Iterator[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    """A streamed completion whose tokens are detokenized with their control tokens while it runs
    (harmony's channel markers; the generator reads the flag at each token)."""
    try:
        while True:
            llama._render_special = True
            try:
                c = next(chunks)
            except StopIteration:
                return
            finally:
                llama._render_special = False
            yield c
    finally:
        llama._render_special = False


def _to_chat_chunks(chunks: Iterator[Dict[str, Any]], tool_mode: Optional[str]) -> Iterator[Dict[str, Any]]:
    deltas = None
    for c in chunks:
        choice = c["choices"][0]
        head = {"id": "chat" + c["id"], "model": c["model"], "created": c["created"], "object": "chat.completion.chunk"}

        def chunk(delta, logprobs=None, finish=None):
            return dict(head, choices=[{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}])
        if deltas is None:
            deltas = R.HarmonyDeltas("call_" + c["id"]) if tool_mode == "harmony" else \
                R.ChatDeltas(tool_mode, "call_" + c["id"])
            yield chunk(deltas.opening())
        lp = _completion_logprobs(choice["logprobs"])
        for d in deltas.text(choice["text"]):
            yield chunk(d, lp)
            lp = None
        if choice["finish_reason"] is None:
            continue
        tail, finish = deltas.finish(choice["finish_reason"])
        for d in tail:
            yield chunk(d)
        out = chunk({}, lp, finish)
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
        tools, tool_choice = R.normalize_tools(tools, tool_choice, functions, function_call)
        result = chat_formatter(messages=messages, functions=functions, function_call=function_call, tools=tools,
                                tool_choice=tool_choice)
        tokens = llama.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        extra = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
        stops += [s for s in extra if s and s not in stops]
        tool_mode = None
        template = R.formatter_template(chat_formatter)
        if grammar is None:
            grammar, tool_mode = R.constraint(response_format, tools, tool_choice, template)
        elif tools and tool_choice in (None, "auto"):  # a caller's grammar: the reply may still hold calls
            tool_mode = R.constraint(None, tools, tool_choice, template)[1]
        harmony = R.is_harmony(template)
        llama._render_special = harmony
        try:
            completion = llama.create_completion(
                prompt=tokens, temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p, typical_p=typical_p,
                logprobs=(top_logprobs or 0) if logprobs else None, stream=stream, stop=stops, seed=seed,
                max_tokens=max_tokens, presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                repeat_penalty=repeat_penalty, tfs_z=tfs_z, mirostat_mode=mirostat_mode, mirostat_tau=mirostat_tau,
                mirostat_eta=mirostat_eta, model=model, stopping_criteria=result.stopping_criteria,
                logits_processor=logits_processor, grammar=grammar, logit_bias=logit_bias)
        finally:
            llama._render_special = False
        if stream:
            return _to_chat_chunks(_rendering_special(llama, completion) if harmony else completion,
                                   "harmony" if harmony else tool_mode)
        if harmony:
            return _to_chat(completion, "harmony")
        return _to_chat(completion, tool_mode)

    chat_completion_handler.chat_formatter = chat_formatter  # type: ignore[attr-defined]
    return chat_completion_handler


# llama-cpp-python's named formatter functions, for the formats the engine's built-in templates lay
# out (its other prompt formats, alpaca, baichuan, ..., are not provided)
def _builtin_format(name: str):
    def format_fn(messages: List[llama_types.ChatCompletionRequestMessage], **kwargs: Any) -> ChatFormatterResponse:
        return builtin_formatter(name)(messages=messages, **kwargs)
    format_fn.__doc__ = f"The {name} layout of messages (the engine's built-in template)."
    return format_fn


format_llama2 = _builtin_format("llama-2")
format_llama3 = _builtin_format("llama-3")
format_chatml = _builtin_format("chatml")
format_qwen = _builtin_format("qwen")
format_mistral_instruct = _builtin_format("mistral-instruct")
format_zephyr = _builtin_format("zephyr")
format_gemma = _builtin_format("gemma")

for _name, (_c_name, _stop) in _BUILTIN.items():
    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        _name, chat_formatter_to_chat_completion_handler(BuiltinChatFormatter(_c_name, _stop)), overwrite=True)
