"""response_format and tools -> a grammar that constrains the output (llama_py.grammar).

response_format {"type": "json_object"} is any JSON object; {"type": "json_schema"} follows the
schema. tools with tool_choice naming a function (or "required" with one tool) constrain the
output to {"name": ..., "arguments": {...}}, returned as a tool call. tool_choice "auto" only
shows the tools to the chat template. Without llama_py.grammar these requests get a 400.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List, Optional, Tuple

from . import protocol as P


def _grammar_module():
    try:
        from .. import grammar
    except ImportError:
        return None
    return grammar


def _need_grammar(param: str):
    g = _grammar_module()
    if g is None:
        raise P.bad(param, "constrained output needs llama_py.grammar, which this installation lacks")
    return g


def _from_schema(g, schema: Any, param: str):
    try:
        return g.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except ValueError as e:
        raise P.bad(param, f"unsupported JSON schema: {e}")


def grammar_for(body: Dict[str, Any]) -> Tuple[Optional[Any], Optional[list], Optional[str]]:
    """(grammar or None, tools to show the template, the function name a tool call is forced to)."""
    rf = body.get("response_format")
    grammar = None
    if rf is not None:
        if not isinstance(rf, dict) or not isinstance(rf.get("type"), str):
            raise P.bad("response_format", "must be an object with a type")
        t = rf["type"]
        if t == "json_object":
            g = _need_grammar("response_format")
            grammar = g.LlamaGrammar.from_string(g.JSON_GBNF, verbose=False)
        elif t == "json_schema":
            js = rf.get("json_schema")
            if not isinstance(js, dict) or not isinstance(js.get("schema"), dict):
                raise P.bad("response_format.json_schema.schema", "must be an object (the JSON schema)")
            grammar = _from_schema(_need_grammar("response_format"), js["schema"], "response_format.json_schema.schema")
        elif t != "text":
            raise P.bad("response_format.type", f"must be text, json_object or json_schema, got {t!r}")
    tools = body.get("tools")
    if tools is None:
        return grammar, None, None
    if not isinstance(tools, list):
        raise P.bad("tools", "must be an array of tools")
    names: List[str] = []
    params: Dict[str, Any] = {}
    for i, t in enumerate(tools):
        f = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(f, dict) \
                or not isinstance(f.get("name"), str):
            raise P.bad(f"tools[{i}]", 'must be {"type": "function", "function": {"name": ..., "parameters": ...}}')
        p = f.get("parameters", {"type": "object"})
        if not isinstance(p, dict):
            raise P.bad(f"tools[{i}].function.parameters", "must be an object (a JSON schema)")
        names.append(f["name"])
        params[f["name"]] = p
    choice = body.get("tool_choice", "auto")
    forced = None
    if isinstance(choice, dict):
        fn = choice.get("function")
        if choice.get("type") != "function" or not isinstance(fn, dict) or fn.get("name") not in params:
            raise P.bad("tool_choice", f"must name one of the tools ({', '.join(names)})")
        forced = fn["name"]
    elif choice == "required":
        if len(names) != 1:
            raise P.bad("tool_choice", '"required" is supported with exactly one tool; name the function instead')
        forced = names[0]
    elif choice not in ("auto", "none"):
        raise P.bad("tool_choice", f"must be none, auto, required or a function, got {choice!r}")
    if forced is not None:
        if grammar is not None:
            raise P.bad("tool_choice", "cannot force a tool call together with response_format")
        schema = {"type": "object", "properties": {"name": {"enum": [forced]}, "arguments": params[forced]},
                  "required": ["name", "arguments"]}
        grammar = _from_schema(_need_grammar("tool_choice"), schema, f"tools[{names.index(forced)}].function.parameters")
    return grammar, (tools if choice != "none" else None), forced


def tool_calls_from_text(text: str, name: str) -> Optional[List[Dict[str, Any]]]:
    """The tool call a forced generation spelled out, or None if the text is not one."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("name") != name:
        return None
    return [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(obj.get("arguments", {}))}}]
