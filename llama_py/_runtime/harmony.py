"""OpenAI's harmony format (gpt-oss) replies, rendered with their control tokens, as OpenAI chat
shapes: a message is a header (`<|start|>assistant`, `<|channel|>NAME`, maybe `to=functions.X`
and `<|constrain|>json`) then `<|message|>` and a body up to `<|end|>`, `<|call|>`, `<|return|>`
or the next `<|start|>`. The analysis channel's bodies -> reasoning_content, a body addressed
`to=functions.NAME` -> an OpenAI tool call (the body its arguments), the rest -> content.

HarmonyDeltas makes those deltas as the text streams in (a body's text goes out as it comes;
what could be the start of a control token is held until it is one or is not); the whole-reply
message is the same machine fed the whole text, so streamed and whole answers agree."""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

_HEADER_END = "<|message|>"
_BODY_ENDS = ("<|end|>", "<|call|>", "<|return|>", "<|start|>")
_TO = re.compile(r"to=functions\.([^\s<]+)")
_MAX_HEADER = 512  # a "header" longer than this without <|message|> is not one: plain text


def is_harmony(template: str) -> bool:
    """A chat template in OpenAI's harmony format (gpt-oss): channels and messages as control tokens."""
    return "<|channel|>" in template and "<|message|>" in template


def _tail_prefix(text: str, markers) -> int:
    """Length of the longest tail of text that is a proper prefix of one of markers."""
    best = 0
    for m in markers:
        for k in range(min(len(text), len(m) - 1), best, -1):
            if text.endswith(m[:k]):
                best = k
                break
    return best


class HarmonyDeltas:
    """One choice's streamed deltas for a harmony reply: opening() the first delta, text(t) the
    deltas for a piece of rendered text, finish(reason) the last ones and the finish_reason
    ("tool_calls" when a call was made and the reply stopped)."""

    mode = None  # no forced tool mode: a token whose text is held reports its logprob on an empty content delta

    def __init__(self, call_id: str):
        self.call_id = call_id
        self.held = ""
        self.phase = "header"   # header (up to <|message|>), body, plain (no harmony markers at all)
        self.kind = None        # body: "reasoning_content", "content" or "call"
        self.n_calls = 0
        self.sent_args = False
        self.seen_message = False

    def opening(self) -> Dict[str, Any]:
        return {"role": "assistant"}

    def _call_delta(self, fragment: str) -> Dict[str, Any]:
        return {"tool_calls": [{"index": self.n_calls - 1, "function": {"arguments": fragment}}]}

    def _body_out(self, text: str, last: bool) -> List[Dict[str, Any]]:
        """A piece of a body as deltas; last: the body ends here (a call's trailing space dropped)."""
        if self.kind != "call":
            return [{self.kind: text}] if text else []
        if not self.sent_args:
            text = text.lstrip()
        keep = "" if last else text[len(text.rstrip()):]
        text = text.rstrip()
        self.held = keep + self.held  # trailing white space waits for what follows it
        if text:
            self.sent_args = True
            return [self._call_delta(text)]
        return []

    def _header(self) -> List[Dict[str, Any]]:
        i = self.held.find(_HEADER_END)
        if i < 0:
            if not self.seen_message and (len(self.held) > _MAX_HEADER or not _could_be_header(self.held)):
                self.phase = "plain"
                out, self.held = self.held, ""
                return [{"content": out}] if out else []
            return []
        header, self.held = self.held[:i], self.held[i + len(_HEADER_END):]
        self.seen_message, self.phase, self.sent_args = True, "body", False
        to = _TO.search(header)
        out: List[Dict[str, Any]] = []
        if to:
            cid = f"{self.call_id}_{self.n_calls}" if self.n_calls else self.call_id
            self.n_calls += 1
            self.kind = "call"
            out.append({"tool_calls": [{"index": self.n_calls - 1, "id": cid, "type": "function",
                                        "function": {"name": to.group(1), "arguments": ""}}]})
        else:
            ch = header.split("<|channel|>", 1)[1] if "<|channel|>" in header else ""
            self.kind = "reasoning_content" if ch.split("<|", 1)[0].split()[:1] == ["analysis"] else "content"
        return out + self._body()

    def _body(self) -> List[Dict[str, Any]]:
        ends = [(i, m) for m, i in ((m, self.held.find(m)) for m in _BODY_ENDS) if i >= 0]
        if ends:
            i, m = min(ends)
            body = self.held[:i]
            self.held = self.held[i + (0 if m == "<|start|>" else len(m)):]
            self.phase = "header"
            return self._body_out(body, True) + self._header()
        k = _tail_prefix(self.held, _BODY_ENDS)
        body, self.held = self.held[:len(self.held) - k], self.held[len(self.held) - k:]
        return self._body_out(body, False)

    def text(self, text: str) -> List[Dict[str, Any]]:
        if self.phase == "plain":
            return [{"content": text}] if text else []
        self.held += text
        return self._header() if self.phase == "header" else self._body()

    def finish(self, reason: Optional[str]) -> Tuple[List[Dict[str, Any]], Optional[str]]:
        out: List[Dict[str, Any]] = []
        if self.phase == "body":
            out = self._body_out(self.held, True)
        elif self.phase == "header" and not self.seen_message and self.held:
            out = [{"content": self.held}]  # no harmony message at all: the text as it is
        self.held = ""
        return out, ("tool_calls" if self.n_calls and reason == "stop" else reason)


def _could_be_header(text: str) -> bool:
    """Whether text may still be a harmony header: it starts with (a prefix of) a control token."""
    t = text.lstrip()
    return not t or any(t.startswith(m) or m.startswith(t) for m in ("<|channel|>", "<|start|>"))


def harmony_message(text: str, finish_reason: Optional[str], call_id: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """(assistant message, finish_reason) of a whole harmony reply rendered with its control
    tokens (see the module's doc). Text without any <|message|> is content as it is."""
    if _HEADER_END not in text:
        return {"role": "assistant", "content": text}, finish_reason
    d = HarmonyDeltas(call_id)
    deltas = d.text(text)
    tail, finish = d.finish(finish_reason)
    reasoning, content, calls = [], [], {}
    for x in deltas + tail:
        reasoning.append(x.get("reasoning_content", ""))
        content.append(x.get("content") or "")
        for tc in x.get("tool_calls", []):
            c = calls.setdefault(tc["index"], {"id": tc.get("id"), "type": "function",
                                               "function": {"name": None, "arguments": ""}})
            c["function"]["name"] = tc["function"].get("name") or c["function"]["name"]
            c["function"]["arguments"] += tc["function"]["arguments"]
    msg: Dict[str, Any] = {"role": "assistant", "content": "".join(content) if any(content) or not calls else None}
    if any(reasoning):
        msg["reasoning_content"] = "".join(reasoning)
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg, finish
