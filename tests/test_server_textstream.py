"""TextStream: streamed text never splits a UTF-8 character nor shows part of a stop string;
the joined deltas equal Python's own decoding cut at the first stop (the reference)."""
from __future__ import annotations

import random

from llama_py._runtime.text import TextStream


def _stream(data: bytes, cuts, stops):
    ts = TextStream(stops)
    out, stopped = [], False
    for a, b in zip([0] + cuts, cuts + [len(data)]):
        text, stopped = ts.push(data[a:b])
        out.append(text)
        if stopped:
            break
    if not stopped:
        out.append(ts.flush())
    return out, stopped


def test_random_splits_match_python_decoding():
    rng = random.Random(0)
    alphabet = ["a", "b", " ", "é", "漢", "😀", "\n", "ab", "STOP"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        data = text.encode()
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 8)))) if len(data) > 1 else []
        stops = rng.choice([[], ["STOP"], ["漢😀"], ["b\n", "é "]])
        out, stopped = _stream(data, cuts, stops)
        hits = [text.find(s) for s in stops if s in text]
        expect = text[:min(hits)] if hits else text
        assert "".join(out) == expect
        assert stopped == bool(hits)
        for piece in out:
            assert "\ufffd" not in piece
            for s in stops:  # no delta ever shows a stop string's start that later completes it
                assert s not in piece


def test_malformed_bytes_are_not_held_forever():
    ts = TextStream([])
    text, _ = ts.push(b"a\xffb")
    assert text == "a\ufffdb"
