"""response_format, tools and the legacy functions -> (grammar, tool mode), checked field by field
so a bad request is a 400 naming the field; the grammar itself is the runtime's
(llama_py._runtime.chat.constraint), as `Llama.create_chat_completion` builds it.

response_format {"type": "json_object"} is any JSON object; {"type": "json_schema"} follows the
schema. tool_choice naming a function (or "required" with one tool) constrains the output to
that function's arguments; "required" with several tools to {"name", "arguments"} of one of
them. Either way the reply is a tool call (streamed as OpenAI streams them). tool_choice "auto"
shows the tools to the chat template.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .._runtime import chat as R
from . import protocol as P


def _check_response_format(rf: Any) -> None:
    if not isinstance(rf, dict) or not isinstance(rf.get("type"), str):
        raise P.bad("response_format", "must be an object with a type")
    t = rf["type"]
    if t == "json_schema":
        js = rf.get("json_schema")
        if not isinstance(js, dict) or not isinstance(js.get("schema"), dict):
            raise P.bad("response_format.json_schema.schema", "must be an object (the JSON schema)")
    elif t not in ("text", "json_object"):
        raise P.bad("response_format.type", f"must be text, json_object or json_schema, got {t!r}")


def _check_tools(tools: Any, param: str) -> List[str]:
    if not isinstance(tools, list):
        raise P.bad(param, "must be an array of tools")
    names = []
    for i, t in enumerate(tools):
        f = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(f, dict) \
                or not isinstance(f.get("name"), str):
            raise P.bad(f"{param}[{i}]", 'must be {"type": "function", "function": {"name": ..., "parameters": ...}}')
        if not isinstance(f.get("parameters", {}), dict):
            raise P.bad(f"{param}[{i}].function.parameters", "must be an object (a JSON schema)")
        names.append(f["name"])
    return names


def grammar_for(body: Dict[str, Any], template: str = "") -> Tuple[Optional[Any], Optional[list], Any, Any]:
    """(grammar or None, tools to show the template, tool_choice, tool mode: None, a function's
    name, "required", or the runtime's AutoTools for the template's tool-call format).
    A GBNF `grammar` field (llama.cpp's server has it) constrains plain replies."""
    rf = body.get("response_format")
    gbnf = body.get("grammar")
    if gbnf is not None and (not isinstance(gbnf, str) or not gbnf.strip()):
        raise P.bad("grammar", "must be a GBNF text")
    if rf is not None:
        _check_response_format(rf)
    functions, function_call = body.get("functions"), body.get("function_call")
    if functions is not None:
        if not isinstance(functions, list) or not all(isinstance(f, dict) for f in functions):
            raise P.bad("functions", "must be an array of function definitions")
        if function_call is not None and not isinstance(function_call, (str, dict)):
            raise P.bad("function_call", "must be none, auto or {\"name\": ...}")
    tools, choice = R.normalize_tools(body.get("tools"), body.get("tool_choice"), functions, function_call)
    tools_param = "tools" if body.get("tools") is not None else "functions"
    if tools is None:
        try:
            grammar, _ = R.constraint(rf, None, None)
        except ValueError as e:
            raise P.bad("response_format.json_schema.schema", f"unsupported JSON schema: {e}")
        return _with_gbnf(grammar, gbnf), None, None, None
    names = _check_tools(tools, tools_param)
    choice_param = "tool_choice" if body.get("tool_choice") is not None else "function_call"
    choice = "auto" if choice is None else choice
    if isinstance(choice, dict):
        fn = choice.get("function")
        if choice.get("type") != "function" or not isinstance(fn, dict) or fn.get("name") not in names:
            raise P.bad(choice_param, f"must name one of the tools ({', '.join(names)})")
    elif choice not in ("auto", "none", "required"):
        raise P.bad(choice_param, f"must be none, auto, required or a function, got {choice!r}")
    if rf is not None and rf.get("type") != "text" and choice not in ("auto", "none"):
        raise P.bad(choice_param, "cannot force a tool call together with response_format")
    try:
        grammar, mode = R.constraint(rf, tools, choice, template)
    except ValueError as e:
        if choice in ("auto", "none"):
            param = "response_format.json_schema.schema"
        elif isinstance(choice, dict) or len(names) == 1:
            name = choice["function"]["name"] if isinstance(choice, dict) else names[0]
            param = f"{tools_param}[{names.index(name)}].function.parameters"
        else:
            param = tools_param
        raise P.bad(param, f"unsupported JSON schema: {e}")
    if gbnf is not None and grammar is not None and not isinstance(mode, R.AutoTools):
        raise P.bad("grammar", "cannot be combined with response_format or a forced tool call")
    if isinstance(mode, R.AutoTools) and gbnf is not None:
        grammar = _with_gbnf(None, gbnf)  # the caller's grammar replaces the lazy tool-call one
    elif mode is None:
        grammar = _with_gbnf(grammar, gbnf)
    return grammar, (tools if choice != "none" else None), choice, mode


def _with_gbnf(grammar, gbnf: Optional[str]):
    if gbnf is None:
        return grammar
    if grammar is not None:
        raise P.bad("grammar", "cannot be combined with response_format")
    from ..grammar import LlamaGrammar
    try:
        return LlamaGrammar.from_string(gbnf, verbose=False)
    except ValueError as e:
        raise P.bad("grammar", str(e))
