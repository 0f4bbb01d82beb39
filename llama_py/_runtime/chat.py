"""Chat requests, once for `Llama.create_chat_completion` and the server's /v1/chat/completions:
messages -> prompt (the model's Jinja template in jinja2's sandbox, or a built-in format),
response_format / tools -> a grammar, and generated text -> OpenAI's chat shapes, tool calls
included (streamed as OpenAI streams them: a header with the function's name, then fragments
of its arguments, then finish_reason "tool_calls").

Templates run in `jinja2.sandbox.ImmutableSandboxedEnvironment`: no attribute that reaches
Python internals, no mutation of the data handed in, so a hostile template in a downloaded
model (the CVE-2024-34359 payloads) raises jinja2's SecurityError instead of running code.
They get what Hugging Face templates expect: messages, bos_token, eos_token,
add_generation_prompt, tools, tool_choice, functions, raise_exception, strftime_now, and a
tojson filter that keeps non-ASCII text.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import json
import logging
import re
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple, Union

from .. import llama_cpp as C

log = logging.getLogger("llama_py")

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
    # imported here: without jinja2 the built-in formats still work (template_formatter warns)
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@functools.lru_cache(maxsize=64)
def compiled(template: str):
    """The template compiled in the sandbox (cached; raises jinja2's TemplateSyntaxError)."""
    return _environment().from_string(template)


def message_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def template_messages(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Messages as chat templates expect them: a tool call's arguments as an object (the API
    sends a JSON string; templates write it with tojson, which would encode it twice), content
    parts kept for templates that walk them."""
    out = []
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if calls:
            fixed = []
            for c in calls:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                    try:
                        fn = dict(fn, arguments=json.loads(fn["arguments"]))
                    except ValueError:
                        pass  # not JSON: the template gets the text as it came
                    c = dict(c, function=fn)
                fixed.append(c)
            m = dict(m, tool_calls=fixed)
        out.append(m)
    return out


def format_chat(messages: List[Dict[str, Any]], template: str, bos_token: str = "", eos_token: str = "",
                add_generation_prompt: bool = True, tools: Optional[List[Dict[str, Any]]] = None, **extra: Any) -> str:
    """Renders a Jinja chat template in the immutable sandbox (raises jinja2's SecurityError on
    an escape attempt, ValueError from the template's raise_exception)."""
    kw = dict(bos_token=bos_token, eos_token=eos_token, add_generation_prompt=add_generation_prompt, tools=tools,
              **extra)
    msgs = template_messages(messages)
    try:
        return compiled(template).render(messages=msgs, **kw)
    except TypeError:
        # a template that adds strings (message['content'] + ...) given content as a list of text
        # parts (guidance and other clients send those): the same messages with the text joined
        flat = [dict(m, content=message_text(m["content"])) if isinstance(m, dict) and isinstance(m.get("content"), list)
                and all(isinstance(p, dict) and p.get("type") == "text" for p in m["content"]) else m for m in msgs]
        if flat == msgs:
            raise
        return compiled(template).render(messages=flat, **kw)


@dataclasses.dataclass
class ChatFormatterResponse:
    """A laid-out prompt; added_special: it already holds the leading special tokens (no BOS to add)."""
    prompt: str
    stop: Optional[Union[str, List[str]]] = None
    stopping_criteria: Optional[Any] = None
    added_special: bool = False


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
        self._environment = compiled(template)  # compile now: a broken template fails at load

    strftime_now = staticmethod(_strftime_now)
    tojson = staticmethod(_tojson)

    def __call__(self, *, messages: List[Dict[str, Any]], functions: Optional[List[Dict[str, Any]]] = None,
                 function_call: Optional[Any] = None, tools: Optional[List[Dict[str, Any]]] = None,
                 tool_choice: Optional[Any] = None, **kwargs: Any) -> ChatFormatterResponse:
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
            from ..llama import StoppingCriteriaList
            stopping = StoppingCriteriaList([stop_on_token])
        return ChatFormatterResponse(prompt=prompt, stop=[self.eos_token] if self.eos_token else [],
                                     stopping_criteria=stopping, added_special=added)

    def to_chat_handler(self):
        from ..llama_chat_format import chat_formatter_to_chat_completion_handler
        return chat_formatter_to_chat_completion_handler(self)


# llama-cpp-python's names (and a few more) -> the engine's template name, and the end-of-turn text
BUILTIN = {
    "chatml": ("chatml", "<|im_end|>"), "qwen": ("chatml", "<|im_end|>"),
    "chatml-function-calling": ("chatml", "<|im_end|>"),
    "llama-2": ("llama2", "</s>"), "llama2": ("llama2", "</s>"), "llama2-sys": ("llama2-sys", "</s>"),
    "llama-3": ("llama3", "<|eot_id|>"), "llama3": ("llama3", "<|eot_id|>"),
    "mistral-instruct": ("mistral-v1", "</s>"), "mistral-v1": ("mistral-v1", "</s>"),
    "mistral-v3": ("mistral-v3", "</s>"), "mistral-v7": ("mistral-v7", "</s>"), "mistral": ("mistral-v1", "</s>"),
    "zephyr": ("zephyr", "</s>"), "gemma": ("gemma", "<end_of_turn>"),
    "phi-3": ("phi3", "<|end|>"), "phi3": ("phi3", "<|end|>"),
}

# a model without a chat template: its architecture's format (the rest get chatml)
_ARCH_FORMAT = {"gemma": "gemma", "gemma2": "gemma", "gemma3": "gemma", "llama": "llama-3", "phi3": "phi-3",
                "mistral": "mistral-instruct", "mistral3": "mistral-v7"}


def apply_builtin_template(template: Union[str, bytes], messages: List[Dict[str, Any]],
                           add_generation_prompt: bool = True) -> str:
    """Lays messages out with llama_chat_apply_template: template is a built-in name or a model's
    template text, recognised among the built-in formats by its markers (never executed)."""
    tmpl = template.encode("utf-8") if isinstance(template, str) else template
    arr = (C.llama_chat_message * max(1, len(messages)))()
    keep = []  # the bytes the C strings point into, alive until the call returns
    for i, m in enumerate(messages):
        role, content = str(m.get("role", "user")).encode("utf-8"), message_text(m.get("content")).encode("utf-8")
        keep += [role, content]
        arr[i].role, arr[i].content = role, content
    n = C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, None, 0)
    if n < 0:
        raise ValueError("the chat template is not one of the built-in formats "
                         "(chatml, llama2, llama3, zephyr, mistral, phi3, gemma, ...); pass chat_format=")
    buf = ctypes.create_string_buffer(n + 1)
    C.llama_chat_apply_template(tmpl, arr, len(messages), add_generation_prompt, buf, n + 1)
    return buf.raw[:n].decode("utf-8", errors="replace")


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
    if name not in BUILTIN:
        raise ValueError(f"chat_format {name!r} is not supported by llama_py; known: {', '.join(sorted(BUILTIN))} "
                         "(or pass chat_handler=, or rely on the model's own template)")
    c_name, stop = BUILTIN[name]
    return BuiltinChatFormatter(c_name, stop)


def template_formatter(template: str, bos_text: str, eos_text: str, eos_id: int = -1, name: str = "chat template"):
    """The formatter of a model's template text: Jinja in the sandbox, or, for a template jinja2
    cannot compile, the built-in format its markers name (logged)."""
    try:
        return Jinja2ChatFormatter(template=template, eos_token=eos_text, bos_token=bos_text,
                                   stop_token_ids=[eos_id] if eos_id >= 0 else None)
    except ImportError:  # a declared dependency, but a broken environment must not fail silently
        import warnings
        warnings.warn(f"jinja2 is not installed: the model's {name} is replaced by the closest built-in "
                      "format, which may not match it (pip install jinja2)")
        return BuiltinChatFormatter(template)
    except Exception as e:  # a template jinja2 cannot compile: the built-in formats may still know it
        log.warning("%s does not compile (%s: %s); using the built-in format its markers name",
                    name, type(e).__name__, e)
        return BuiltinChatFormatter(template)


def fallback_format(arch: str, default: str = "chatml") -> str:
    """The format for a model with no chat template: its architecture's, else default (logged)."""
    name = _ARCH_FORMAT.get(arch, default)
    log.info("the model has no chat template; using the %s format (architecture %s)", name, arch or "unknown")
    return name


# ---- request -> grammar ----


def _grammar():
    from .. import grammar
    return grammar


def normalize_tools(tools: Optional[List[Dict[str, Any]]], tool_choice: Any, functions: Optional[list],
                    function_call: Any) -> Tuple[Optional[List[Dict[str, Any]]], Any]:
    """The legacy functions / function_call as tools / tool_choice ("none", "auto" or a name)."""
    if functions and not tools:
        tools = [{"type": "function", "function": f} for f in functions]
    if function_call is not None and tool_choice is None:
        tool_choice = function_call if isinstance(function_call, str) else \
            {"type": "function", "function": {"name": function_call.get("name")}}
    return tools, tool_choice


def tool_schema(tool: Dict[str, Any]) -> Dict[str, Any]:
    """A tool's parameters schema (an object of anything when it gives none)."""
    return tool["function"].get("parameters") or {"type": "object"}


def constraint(response_format: Optional[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]],
               tool_choice: Any, template: str = "") -> Tuple[Optional[Any], Any]:
    """(grammar, tool mode) a request asks for. Tool mode: None (text), a function's name (the
    output is that function's arguments), "required" (the output is {"name", "arguments"}
    for one of several tools), or an AutoTools (tool_choice "auto" with tools: text or calls
    in the format of the template's family). ValueError for a tool choice naming no tool or a
    schema the converter refuses (the message names the keyword)."""
    g = None
    if response_format and response_format.get("type") in ("json_object", "json_schema"):
        schema = response_format.get("schema")
        if schema is None and isinstance(response_format.get("json_schema"), dict):
            schema = response_format["json_schema"].get("schema")
        gm = _grammar()
        if schema is None:
            g = gm.LlamaGrammar.from_string(gm.JSON_GBNF, verbose=False)
        else:
            g = gm.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    if tools and tool_choice in (None, "auto") and g is None:
        auto = AutoTools(tool_family(template), [t["function"]["name"] for t in tools])
        return auto.grammar(tools), auto
    if not tools or tool_choice in (None, "auto", "none"):
        return g, None
    if g is not None:
        raise ValueError("cannot force a tool call together with response_format")
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        tool = next((t for t in tools if t["function"]["name"] == name), None)
        if tool is None:
            raise ValueError(f"Tool choice '{name}' not found in tools.")
    elif tool_choice == "required":
        if len(tools) > 1:
            schema = {"anyOf": [{"type": "object", "properties": {
                "name": {"const": t["function"]["name"]}, "arguments": tool_schema(t)},
                "required": ["name", "arguments"]} for t in tools]}
            return _grammar().LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False), "required"
        tool = tools[0]
    else:
        raise ValueError(f"tool_choice must be none, auto, required or a function, got {tool_choice!r}")
    name = tool["function"]["name"]
    return _grammar().LlamaGrammar.from_json_schema(json.dumps(tool_schema(tool)), verbose=False), name


# ---- tool_choice "auto": the model's own tool-call format ----

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def tool_family(template: str) -> str:
    """The tool-call format a chat template teaches its model, from its markers: "hermes"
    (Hermes / Qwen <tool_call>{...}</tool_call>), "mistral" ([TOOL_CALLS][...]), "llama3"
    (a JSON object {"name", "parameters"}, after <|python_tag|> or alone), else "json" (a JSON
    object or a fenced ```json block with name and arguments)."""
    t = template or ""
    if "<tool_call>" in t:
        return "hermes"
    if "[TOOL_CALLS]" in t:
        return "mistral"
    if "<|python_tag|>" in t or "ipython" in t or "<|eom_id|>" in t:
        return "llama3"
    return "json"


def formatter_template(fmt: Any) -> str:
    """The template text (or built-in name) behind a formatter, "" when it has none."""
    t = getattr(fmt, "template", "") or ""
    return t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t)


class AutoTools:
    """tool_choice "auto": the reply is text, tool calls in the family's format, or both.
    markers are the texts that open a call; parse() splits a whole reply."""

    # Hermes models (Qwen 2.5's small ones among them) also write a call as a fenced or bare JSON
    # object at the reply's start, which llama.cpp's Hermes parser accepts too
    _MARKERS = {"hermes": ["<tool_call>", "```", "{"], "mistral": ["[TOOL_CALLS]"],
                "llama3": ["<|python_tag|>", "{"], "json": ["```", "{"]}

    def __init__(self, family: str, names: List[str]):
        self.family = family
        self.names = set(names)
        self.markers = self._MARKERS[family]
        # markers that open a call after some text too (a bare "{" or a fence only at the start)
        self.anywhere = {"<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"} | ({"```"} if family == "json" else set())

    def grammar(self, tools: List[Dict[str, Any]]):
        """A lazy grammar that keeps a call, once its opening marker is written, to the family's
        format with arguments valid for the tool's schema (as llama.cpp's server does); None for
        the fenced-JSON family, whose marker can open ordinary prose too. ValueError when a
        tool's schema cannot be converted."""
        from ..grammar import LlamaGrammar, json_schema_to_gbnf
        key = "parameters" if self.family == "llama3" else "arguments"
        alts = [{"type": "object", "properties": {"name": {"const": t["function"]["name"]}, key: tool_schema(t)},
                 "required": ["name", key]} for t in tools]
        call = json_schema_to_gbnf(alts[0] if len(alts) == 1 else {"anyOf": alts})
        call = call.replace("root ::= ", "tool-call ::= ", 1)
        if self.family == "hermes":
            root = 'root ::= one-call ( ws one-call )* ws\none-call ::= "<tool_call>" ws tool-call ws "</tool_call>"'
            trigger = r"[\s\S]*?(<tool_call>)[\s\S]*"
        elif self.family == "mistral":
            root = 'root ::= "[TOOL_CALLS]" ws "[" ws tool-call ws ( "," ws tool-call ws )* "]" ws'
            trigger = r"[\s\S]*?(\[TOOL_CALLS\])[\s\S]*"
        elif self.family == "llama3":
            root = 'root ::= ("<|python_tag|>" ws)? tool-call ws'
            trigger = r"\s*(<\|python_tag\|>|\{)[\s\S]*"
        else:
            return None
        return LlamaGrammar.from_string(root + "\n" + call, verbose=False).lazy([trigger])

    def _call(self, obj: Any) -> Optional[Tuple[str, str]]:
        if not isinstance(obj, dict) or obj.get("name") not in self.names:
            return None
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):  # some models write the arguments as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                return None
        return obj["name"], json.dumps(args, ensure_ascii=False)

    def _calls(self, objs: List[Any]) -> Optional[List[Tuple[str, str]]]:
        calls = [self._call(o) for o in objs]
        return calls if calls and all(c is not None for c in calls) else None

    @staticmethod
    def _json_values(text: str) -> Optional[List[Any]]:
        """The JSON values text holds one after another (separated by whitespace or ';'), or None."""
        dec, i, out = json.JSONDecoder(), 0, []
        text = text.strip()
        while i < len(text):
            try:
                v, i = dec.raw_decode(text, i)
            except ValueError:
                return None
            out += v if isinstance(v, list) else [v]
            while i < len(text) and text[i] in " \t\r\n;,":
                i += 1
        return out or None

    def parse(self, text: str) -> Tuple[str, List[Tuple[str, str]]]:
        """(content before the calls, [(name, arguments JSON)]); no calls: (text, [])."""
        found = [i for i in (text.find(m) for m in self.markers)
                 if i >= 0 and (text.startswith(tuple(self.anywhere), i) or not text[:i].strip())]
        if not found:
            return text, []
        start = min(found)
        head, body = text[:start], text[start:]
        calls = None
        if self.family == "hermes" and body.startswith("<tool_call>"):
            blocks = re.findall(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", body, re.S)
            objs = [self._json_values(b) for b in blocks]
            calls = self._calls([o for v in objs if v for o in v]) if all(objs) else None
        elif self.family == "mistral":
            vals = self._json_values(body[len("[TOOL_CALLS]"):])
            calls = self._calls(vals) if vals else None
        else:
            if body.startswith("<|python_tag|>"):
                body = body[len("<|python_tag|>"):]
            m = _FENCE.match(body.strip()) if body.lstrip().startswith("```") else None
            vals = self._json_values(m.group(1) if m else body)
            calls = self._calls(vals) if vals else None
        if not calls:
            return text, []
        return head.strip(), calls


# ---- generated text -> chat shapes ----

from .harmony import HarmonyDeltas, harmony_message, is_harmony  # noqa: E402,F401  (gpt-oss replies)


def tool_call(mode: str, text: str, call_id: str) -> Optional[Dict[str, Any]]:
    """The OpenAI tool call a constrained generation spelled out (None if the text is not one)."""
    if mode != "required":
        return {"id": call_id, "type": "function", "function": {"name": mode, "arguments": text}}
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    return {"id": call_id, "type": "function",
            "function": {"name": obj["name"], "arguments": json.dumps(obj.get("arguments", {}), ensure_ascii=False)}}


def chat_message(text: str, finish_reason: Optional[str], tool_mode: Optional[str],
                 call_id: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """(assistant message, finish_reason) for a whole generation."""
    if isinstance(tool_mode, AutoTools):  # the streaming machine over the whole text: both agree
        from .toolstream import AutoCallStream, assemble
        st = AutoCallStream(tool_mode, call_id)
        deltas = st.text(text)
        tail, finish = st.finish(finish_reason)
        content, calls = assemble(deltas + tail)
        if not calls:
            return {"role": "assistant", "content": text}, finish_reason
        return {"role": "assistant", "content": content.strip() or None, "tool_calls": calls}, finish
    if tool_mode is not None:
        call = tool_call(tool_mode, text, call_id)
        if call is not None:
            msg = {"role": "assistant", "content": None, "function_call": dict(call["function"]),
                   "tool_calls": [call]}
            return msg, "tool_calls" if finish_reason == "stop" else finish_reason
    return {"role": "assistant", "content": text}, finish_reason


_REQUIRED_HEAD = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*')
_TAIL = re.compile(r'\}?\s*$')


class ChatDeltas:
    """One choice's streamed deltas. opening() is the first delta; text(t) the deltas for a
    piece of generated text; finish(reason) the last deltas and the finish_reason to report.

    With a tool mode the text is a call's arguments: the first delta names the function (with
    an id and empty arguments), then each piece of text is an arguments fragment. In "required"
    mode the name comes from the generated {"name": ..., "arguments": ...}: text is held until
    the name is complete, and the closing brace of that object is never sent. With tool_choice
    "auto" (an AutoTools) toolstream.AutoCallStream makes the deltas: content until a call
    opens, then each call's header as soon as its name is complete and its arguments piece by
    piece."""

    def __init__(self, tool_mode: Any, call_id: str):
        from .toolstream import AutoCallStream
        self.auto = AutoCallStream(tool_mode, call_id) if isinstance(tool_mode, AutoTools) else None
        self.mode = None if self.auto else tool_mode
        self.call_id = call_id
        self.held = ""
        self.named = self.mode is not None and self.mode != "required"

    def _header(self, name: str) -> Dict[str, Any]:
        return {"tool_calls": [{"index": 0, "id": self.call_id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]}

    @staticmethod
    def _args(fragment: str) -> Dict[str, Any]:
        return {"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}

    def opening(self) -> Dict[str, Any]:
        if self.mode is None:
            return {"role": "assistant"}
        head = {"role": "assistant", "content": None}
        if self.named:
            head.update(self._header(self.mode))
        return head

    def text(self, text: str) -> List[Dict[str, Any]]:
        if self.auto is not None:
            return self.auto.text(text)
        if self.mode is None:
            return [{"content": text}] if text else []
        if self.mode != "required":
            return [self._args(text)] if text else []
        self.held += text
        out = []
        if not self.named:
            m = _REQUIRED_HEAD.match(self.held)
            if m is None:
                return []
            self.named = True
            out.append(self._header(json.loads('"' + m.group(1) + '"')))
            self.held = self.held[m.end():]
        keep = len(_TAIL.search(self.held).group(0))  # the object's closing brace may be what came last
        if len(self.held) > keep:
            out.append(self._args(self.held[:len(self.held) - keep]))
            self.held = self.held[len(self.held) - keep:]
        return out

    def finish(self, reason: Optional[str]) -> Tuple[List[Dict[str, Any]], Optional[str]]:
        if self.auto is not None:
            return self.auto.finish(reason)
        if self.mode is None:
            return [], reason
        out = []
        if self.mode == "required":
            if not self.named:  # never became a call: what was generated, as text
                return ([{"content": self.held}] if self.held else []), reason
            tail = self.held if reason != "stop" else self.held[:self.held.rfind("}")] if "}" in self.held else self.held
            if tail:
                out.append(self._args(tail))
        return out, "tool_calls" if reason == "stop" else reason


def chat_logprobs(items: Optional[List[Tuple[str, Optional[float], Any]]]) -> Optional[Dict[str, Any]]:
    """OpenAI's chat logprobs object from (token text, logprob, alternatives) items, the
    alternatives a {text: logprob} dict or (text, logprob) pairs; None for None."""
    if items is None:
        return None
    content = []
    for tok, logprob, top in items:
        alts = top.items() if isinstance(top, dict) else (top or [])
        content.append({"token": tok, "logprob": logprob, "bytes": list(tok.encode("utf-8")),
                        "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))}
                                         for t, v in alts]})
    return {"content": content, "refusal": None}
