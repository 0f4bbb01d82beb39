"""Llama.create_chat_completion and friends (mixed into Llama).

The handler is, in order: chat_handler=, the format chat_format= names (a template of the
model's own, "chat_template.default" / "chat_template.<name>", or a registered format), and
by default the model's Jinja template rendered in jinja2's sandbox (llama_py._runtime.chat, as the
server renders it). A model whose template jinja2 cannot compile falls back to the engine's
built-in formats recognised from the template's markers; a model with no template uses llama-2
(llama-cpp-python's default).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from . import llama_chat_format as F
from ._runtime import chat as R


class _ChatMixin:
    def _init_chat(self) -> None:
        self._chat_handlers: Dict[str, Any] = {}
        self._chat_formatters: Dict[str, Any] = {}
        meta = self.metadata
        templates = {k[len("tokenizer."):]: v for k, v in meta.items() if k.startswith("tokenizer.chat_template.")}
        if "tokenizer.chat_template" in meta:
            templates["chat_template.default"] = meta["tokenizer.chat_template"]
        eos, bos = self.token_eos(), self.token_bos()
        eos_text = self._detokenize_vocab([eos], True).decode("utf-8", "replace") if eos >= 0 else ""
        bos_text = self._detokenize_vocab([bos], True).decode("utf-8", "replace") if bos >= 0 else ""
        for name, template in templates.items():
            fmt = R.template_formatter(template, bos_text, eos_text, eos, name)
            self._chat_formatters[name] = fmt
            self._chat_handlers[name] = F.chat_formatter_to_chat_completion_handler(fmt)
        if self.chat_format is None and self.chat_handler is None:
            self.chat_format = "chat_template.default" if "chat_template.default" in templates else "llama-2"

    def _chat_formatter(self):
        name = self.chat_format
        if name in self._chat_formatters:
            return self._chat_formatters[name]
        handler = F.LlamaChatCompletionHandlerRegistry()._handlers.get(name)
        if handler is not None and hasattr(handler, "chat_formatter"):
            return handler.chat_formatter
        return F.builtin_formatter(name)

    def apply_chat_template(self, messages: List[Dict[str, Any]], add_generation_prompt: bool = True,
                            **kwargs: Any) -> str:
        """The prompt text the current chat format lays messages out as."""
        self._check_open(need_ctx=False)
        if self.chat_handler is not None and self.chat_format is None:
            raise ValueError("this Llama uses a chat_handler: its prompt layout is the handler's own")
        return self._chat_formatter()(messages=messages, add_generation_prompt=add_generation_prompt, **kwargs).prompt

    def create_chat_completion(self, messages: List[Dict[str, Any]], functions: Optional[List[Dict[str, Any]]] = None,
                               function_call: Optional[Any] = None, tools: Optional[List[Dict[str, Any]]] = None,
                               tool_choice: Optional[Any] = None, temperature: float = 0.2, top_p: float = 0.95,
                               top_k: int = 40, min_p: float = 0.05, typical_p: float = 1.0, stream: bool = False,
                               stop: Optional[Union[str, List[str]]] = [], seed: Optional[int] = None,
                               response_format: Optional[Dict[str, Any]] = None, max_tokens: Optional[int] = None,
                               presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                               repeat_penalty: float = 1.0, tfs_z: float = 1.0, mirostat_mode: int = 0,
                               mirostat_tau: float = 5.0, mirostat_eta: float = 0.1, model: Optional[str] = None,
                               logits_processor: Optional[Any] = None, grammar: Optional[Any] = None,
                               logit_bias: Optional[Dict[int, float]] = None, logprobs: Optional[bool] = None,
                               top_logprobs: Optional[int] = None):
        """OpenAI-style chat completion; with stream=True an iterator of delta chunks (the first
        carries the role, the last the finish_reason and usage). response_format
        {"type": "json_object"} (optionally with "schema"), or {"type": "json_schema",
        "json_schema": {"schema": ...}}, constrains the reply to JSON; tools with a named
        tool_choice (or "required") return OpenAI tool_calls. logprobs / top_logprobs as OpenAI's."""
        self._check_open()
        handler = (self.chat_handler or self._chat_handlers.get(self.chat_format)
                   or F.get_chat_completion_handler(self.chat_format))
        return handler(llama=self, messages=messages, functions=functions, function_call=function_call, tools=tools,
                       tool_choice=tool_choice, temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p,
                       typical_p=typical_p, logprobs=logprobs, top_logprobs=top_logprobs, stream=stream, stop=stop,
                       seed=seed, response_format=response_format, max_tokens=max_tokens,
                       presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                       repeat_penalty=repeat_penalty, tfs_z=tfs_z, mirostat_mode=mirostat_mode,
                       mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta, model=model,
                       logits_processor=logits_processor, grammar=grammar, logit_bias=logit_bias)

    def create_chat_completion_openai_v1(self, *args: Any, **kwargs: Any):
        """create_chat_completion returning the openai package's ChatCompletion / ChatCompletionChunk objects."""
        try:
            from openai.types.chat import ChatCompletion, ChatCompletionChunk
        except ImportError as e:
            raise ImportError("To use create_chat_completion_openai_v1, you must install the openai package "
                              "(pip install openai).") from e
        if kwargs.get("stream", False):
            return (ChatCompletionChunk(**chunk) for chunk in self.create_chat_completion(*args, **kwargs))
        return ChatCompletion(**self.create_chat_completion(*args, **kwargs))

