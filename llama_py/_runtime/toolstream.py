"""tool_choice "auto" streamed as OpenAI streams tool calls: text before a call is content; once
a call's function name is complete (and is one of the tools) a header delta names it, then each
piece of its arguments' JSON is an arguments fragment as the model writes it; several calls in
one reply get indexes 0, 1, ... The same machine, fed a whole reply at once, gives the
non-streamed message, so streamed and whole answers agree.

A call is recognised by its head: an optional family marker (<tool_call>, [TOOL_CALLS],
<|python_tag|>), an optional ``` / ```json fence, an optional "[", then
{"name": "<tool>", "arguments" | "parameters": <value>. Held text that cannot become such a head
before its "{" is released as content; one that breaks the head after its "{" (keys in another
order, arguments written as a JSON string) is held and parsed whole at the end
(AutoTools.parse).
"""
from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Optional, Tuple

log = logging.getLogger("llama_py")

_OPENERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
_FENCES = ("```json", "```")
# what may stand between two calls, or after the last one
_SEPARATORS = ("</tool_call>", "<tool_call>", "```", "<|eom_id|>", ",", ";", "]")
_HEAD = [("opt", _OPENERS), ("ws",), ("opt", _FENCES), ("ws",), ("opt", ("[",)), ("ws",), ("lit", ("{",)),
         ("ws",), ("lit", ('"name"',)), ("ws",), ("lit", (":",)), ("ws",), ("str",), ("ws",), ("lit", (",",)), ("ws",),
         ("lit", ('"arguments"', '"parameters"')), ("ws",), ("lit", (":",)), ("ws",)]
_BRACE = 6  # index of the "{" in _HEAD: a failure after it is not plain text


def _match_head(buf: str) -> Tuple[str, int, Optional[str], int, int]:
    """Matches _HEAD against buf: (state, end, raw name, failed element, brace) where state is
    "ok", "more" (buf ends inside the head) or "fail"; raw name is the function name's JSON
    text once complete (else None), brace the index of the call object's "{"."""
    i, name, brace = 0, None, -1
    for k, el in enumerate(_HEAD):
        kind = el[0]
        if k == _BRACE:
            brace = i
        if kind == "ws":
            while i < len(buf) and buf[i] in " \t\r\n":
                i += 1
            if i == len(buf):
                return "more", 0, name, 0, brace
        elif kind in ("opt", "lit"):
            rest = buf[i:]
            if any(len(a) > len(rest) and a.startswith(rest) for a in el[1]):
                return "more", 0, name, 0, brace  # rest is a proper prefix of one: wait (```js may be ```json)
            hit = next((a for a in el[1] if rest.startswith(a)), None)
            if hit is not None:
                i += len(hit)
            elif kind == "lit":
                return "fail", 0, name, k, brace
        else:  # a JSON string
            if i == len(buf):
                return "more", 0, name, 0, brace
            if buf[i] != '"':
                return "fail", 0, name, k, brace
            j = i + 1
            while j < len(buf) and buf[j] != '"':
                j += 2 if buf[j] == "\\" else 1
            if j >= len(buf):
                return "more", 0, name, 0, brace
            name, i = buf[i + 1:j], j + 1
    return "ok", i, name, 0, brace


class _Value:
    """Tracks where a JSON value ends, one character at a time."""

    def __init__(self):
        self.depth, self.in_str, self.esc, self.started = 0, False, False, False

    def feed(self, ch: str) -> bool:
        """True once ch is the value's last character (a scalar ends before a , or } at depth 0:
        that character is not taken, the caller sees feed return None then)."""
        if self.in_str:
            if self.esc:
                self.esc = False
            elif ch == "\\":
                self.esc = True
            elif ch == '"':
                self.in_str = False
                return self.depth == 0
            return False
        if ch == '"':
            self.in_str, self.started = True, True
        elif ch in "{[":
            self.depth += 1
            self.started = True
        elif ch in "}]":
            self.depth -= 1
            return self.depth == 0
        elif not ch.isspace():
            self.started = True
        return False


class AutoCallStream:
    """The deltas of one choice under tool_choice "auto" (see the module's doc). text(t) returns
    the deltas for a piece of generated text, finish(reason) the last ones and the finish_reason."""

    def __init__(self, auto: Any, call_id: str):
        self.auto = auto
        self.call_id = call_id
        self.held = ""
        self.phase = "content"   # content, head, args, rest, between, hold, text
        self.wrote = False       # content other than white space has been sent
        self.n_calls = 0
        self.value: Optional[_Value] = None
        self.depth = 0           # rest: braces of the call object still open
        self.pos = 0             # args, rest, object: how far into held the value has been read
        self.named = False       # head: this call's header has been sent
        self.str_args = False    # args: the value is a JSON string (decoded when whole)
        self.sent_args = False   # args: some of this call's arguments have been sent

    # ---- content before any call ----

    def _opens_anywhere(self, m: str) -> bool:
        """A bare object or a fence opens a call only as the reply's start (unless the family
        says otherwise); the family's own marker opens one anywhere."""
        return m not in ("{", "```") or m in self.auto.anywhere

    def _openers(self) -> List[Tuple[int, str]]:
        found = []
        for m in self.auto.markers:
            i = self.held.find(m)
            if i >= 0 and (self._opens_anywhere(m) or not (self.wrote or self.held[:i].strip())):
                found.append((i, m))
        return found

    def _content(self) -> List[Dict[str, Any]]:
        found = self._openers()
        if found:
            i = min(found)[0]
            out, self.held, self.phase = self.held[:i], self.held[i:], "head"
        else:
            tails = [_prefix_tail(self.held, m) for m in self.auto.markers]
            hold = max((k for m, k in zip(self.auto.markers, tails) if self._opens_anywhere(m)
                        or not (self.wrote or self.held[:len(self.held) - k].strip())), default=0)
            out, self.held = self.held[:len(self.held) - hold], self.held[len(self.held) - hold:]
            if set(self.auto.markers) & {"{", "```"} and not (self.wrote or out.strip()):
                out, self.held = "", out + self.held  # leading white space: a call may still open
        if out.strip():
            self.wrote = True
        return ([{"content": out}] if out else []) + (self._step() if self.phase != "content" else [])

    # ---- calls ----

    def _index_id(self) -> Tuple[int, str]:
        i = self.n_calls
        return i, (f"{self.call_id}_{i}" if i else self.call_id)

    def _header(self, name: str) -> Dict[str, Any]:
        i, cid = self._index_id()
        return {"tool_calls": [{"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]}

    def _args(self, fragment: str) -> Dict[str, Any]:
        return {"tool_calls": [{"index": self.n_calls, "function": {"arguments": fragment}}]}

    def _head(self) -> List[Dict[str, Any]]:
        state, end, raw, failed, brace = _match_head(self.held)
        out: List[Dict[str, Any]] = []
        if raw is not None and not self.named:  # the name is complete: a tool's, or not a call
            try:
                name = json.loads('"' + raw + '"')
            except ValueError:
                name = None
            if name not in self.auto.names:
                return self._give_up()
            out.append(self._header(name))
            self.named = True
        if state == "more":
            return out
        if state == "fail":
            if self.named:  # other keys before the arguments: the object is read whole
                self.held, self.phase, self.value, self.pos = self.held[brace:], "object", _Value(), 0
                return out + self._step()
            if failed > _BRACE and self.n_calls == 0:
                self.phase = "hold"  # an object, not in the streamable order: parsed whole at the end
                return out
            return self._give_up()
        self.held, self.phase, self.value, self.pos = self.held[end:], "args", _Value(), 0
        self.str_args = self.sent_args = False
        return out + self._step()

    def _give_up(self) -> List[Dict[str, Any]]:
        """Not a call after all: what is held, and all that follows, is content."""
        out, self.held, self.phase = self.held, "", "text"
        if out.strip():
            self.wrote = True
        return [{"content": out}] if out else []

    def _scan(self, scalar_ends: bool) -> int:
        """Feeds held to the value from pos on: the index just past the value's end, or -1."""
        v = self.value
        while self.pos < len(self.held):
            ch = self.held[self.pos]
            if scalar_ends and v.started and v.depth == 0 and not v.in_str and ch in ",}":
                return self.pos  # a scalar ended before this character
            self.pos += 1
            if v.feed(ch):
                return self.pos
        return -1

    def _arguments(self) -> List[Dict[str, Any]]:
        if not self.value.started and self.held.lstrip().startswith('"'):
            self.str_args = True  # arguments written as a JSON string: sent decoded at its end
        end = self._scan(True)
        if end >= 0:
            return self._end_args(end)
        if self.str_args or not self.value.started:
            return []  # held: a string's end, or the value's first character
        frag, self.held, self.pos = self.held, "", 0
        return self._fragment(frag)

    def _fragment(self, frag: str) -> List[Dict[str, Any]]:
        if not self.sent_args:
            frag = frag.lstrip()  # white space before the value
        self.sent_args = self.sent_args or bool(frag)
        return [self._args(frag)] if frag else []

    def _end_args(self, upto: int) -> List[Dict[str, Any]]:
        frag = self.held[:upto]
        if self.str_args:
            frag = _decoded(frag)
        self.held, self.phase = self.held[upto:], "rest"
        self.value, self.pos = _Value(), 0
        self.value.depth = 1  # inside the call object, after its arguments
        out = self._fragment(frag)
        self._next_call()
        return out + self._step()

    def _next_call(self):
        self.n_calls += 1
        self.named = self.str_args = self.sent_args = False

    def _object(self) -> List[Dict[str, Any]]:
        """A call object whose arguments do not follow its name: its arguments once it is whole."""
        end = self._scan(False)
        if end < 0:
            return []
        try:
            obj = json.loads(self.held[:end])
            args = obj.get("arguments", obj.get("parameters", {}))
        except (ValueError, AttributeError):
            args = {}
        self.held, self.phase = self.held[end:], "between"
        out = self._fragment(_decoded(json.dumps(args, ensure_ascii=False)) if not isinstance(args, str) else args)
        self._next_call()
        return out + self._step()

    def _rest(self) -> List[Dict[str, Any]]:
        """The call object's other keys, up to its closing brace (ignored)."""
        v = self.value
        while self.pos < len(self.held):
            ch = self.held[self.pos]
            self.pos += 1
            v.feed(ch)
            if v.depth == 0 and not v.in_str:
                self.held, self.phase = self.held[self.pos:], "between"
                return self._step()
        return []

    def _between(self) -> List[Dict[str, Any]]:
        while True:
            s = self.held.lstrip()
            hit = next((m for m in _SEPARATORS if s.startswith(m)), None)
            if hit is None:
                break
            self.held = s[len(hit):]
        s = self.held.lstrip()
        if not s or any(m.startswith(s) for m in _SEPARATORS):
            return []
        if s[0] in "{[":
            self.held, self.phase = s, "head"
            return self._step()
        log.debug("text after the tool calls, sent as content: %r", s[:80])
        return self._give_up()

    def _step(self) -> List[Dict[str, Any]]:
        return {"content": self._content, "head": self._head, "args": self._arguments, "rest": self._rest,
                "object": self._object, "between": self._between}.get(self.phase, lambda: [])()

    def text(self, text: str) -> List[Dict[str, Any]]:
        if self.phase == "text":
            return [{"content": text}] if text else []
        self.held += text
        return self._step()

    def finish(self, reason: Optional[str]) -> Tuple[List[Dict[str, Any]], Optional[str]]:
        out: List[Dict[str, Any]] = []
        if self.phase in ("head", "hold") and not self.named:
            before = self.n_calls
            content, calls = self.auto.parse(self.held)
            if calls:
                if content:
                    out.append({"content": content})
                for name, args in calls:
                    out += [self._header(name), self._args(args)]
                    self.n_calls += 1
            elif self.n_calls == before:
                out.append({"content": self.held}) if self.held else None
        elif self.phase == "content" and self.held:
            out.append({"content": self.held})
        elif self.phase == "between" and self.held.strip():
            out.append({"content": self.held})
        self.held = ""
        return out, ("tool_calls" if self.n_calls and reason == "stop" else reason)


def _decoded(text: str) -> str:
    """A JSON string literal's text (arguments some models write as a string), else text."""
    try:
        v = json.loads(text)
    except ValueError:
        return text
    return v if isinstance(v, str) else text


def _prefix_tail(text: str, marker: str) -> int:
    """Length of the longest tail of text that is a proper prefix of marker."""
    for k in range(min(len(text), len(marker) - 1), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


def assemble(deltas: List[Dict[str, Any]]) -> Tuple[str, List[Dict[str, Any]]]:
    """(content, OpenAI tool calls) from a list of deltas, as a client puts them together."""
    content, calls = [], {}
    for d in deltas:
        if d.get("content"):
            content.append(d["content"])
        for tc in d.get("tool_calls") or []:
            c = calls.setdefault(tc["index"], {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
            if tc.get("id"):
                c["id"] = tc["id"]
            fn = tc.get("function") or {}
            if fn.get("name"):
                c["function"]["name"] = fn["name"]
            c["function"]["arguments"] += fn.get("arguments") or ""
    return "".join(content), [calls[i] for i in sorted(calls)]
