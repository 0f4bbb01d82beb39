"""Strings the tokenizers are checked on against sentencepiece and HF tokenizers.

CORPUS: hand-picked hard cases (whitespace of every kind, contractions, digits of many scripts,
code, emoji sequences, CJK, combining marks, control characters, long runs, special-token texts)
plus deterministic random mixes of them. SPECIAL_CORPUS: texts with the special tokens of the
test vocabularies, for parse_special = true.
"""
from __future__ import annotations

import random

HARD = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    " \n",
    "\n ",
    "  \n  ",
    " \t \n \r\n \t",
    "Hello world",
    "Hello World!",
    " Hello world",
    "  Hello world",
    "Hello world ",
    "Hello world  ",
    "Hello  world",
    "Hello   world",
    "Hello\tworld",
    "Hello\nworld",
    "Hello\n\nworld",
    "Hello \n world",
    "Hello\r\nworld\r\n",
    "line one\n  indented\n\tTabbed\n\n\nthree blank",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "I'm here. You're there. He's gone. We've won. They'll see. I'd say. Don't.",
    "I'M HERE. YOU'RE THERE. HE'S GONE. WE'VE WON. THEY'LL SEE. I'D SAY. DON'T.",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D 'Re 'rE",
    "it's its' 'tis rock'n'roll o'clock",
    "don’t won’t it’s",  # typographic apostrophe
    "''''",
    "' s",
    "'\n",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "123456789012345678901234567890",
    "3.14159",
    "1,000,000",
    "-42",
    "+7 (555) 010-9999",
    "2024-01-31T12:34:56Z",
    "0x1F 0b1010 1e-9 1_000",
    "abc123def456",
    "123abc",
    "٣٤٥ ١٢",  # Arabic-Indic digits
    "१२३४",  # Devanagari digits
    "½ ¼ ² ³ ⁴ ₅",
    "Ⅻ ⅷ 〇",
    "①②③",
    "!!!",
    "...",
    "?!?!",
    "---",
    "***",
    "()[]{}<>",
    "$100 + €20 = ¥?",
    "a+b=c^2 ~x |y| <z>",
    "#hashtag @mention",
    "50% off!!!",
    "\"quoted\" and 'single'",
    "«guillemets» „Anführungszeichen“",
    "email: someone@example.com, url: https://example.com/a/b?c=d&e=f#g",
    "path/to/file.txt C:\\Windows\\System32",
    "def f(x):\n    return x * 2\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
    '{"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
    "<html><body class=\"x\">Hi &amp; bye</body></html>",
    "SELECT * FROM t WHERE a >= 10 AND b <> 'x';",
    "    four leading spaces",
    "trailing spaces    ",
    "mixed \t\n whitespace \u00a0 nbsp",
    "\u00a0",
    "a\u00a0b",
    "a\u3000b\u3000",
    "a\u2028b\u2029c",
    "a\u0085b",
    "a\u000bb\u000cc",
    "a\u200bb",  # zero-width space (not White_Space)
    "a\u200db",  # zero-width joiner
    "\ufeffBOM",
    "a\u180eb",
    "\u2000\u2001\u2002\u200a x",
    "caf\u00e9 cafe\u0301",  # precomposed and combining
    "e\u0301\u0302\u0303",
    "na\u00efve co\u00f6perate r\u00e9sum\u00e9",
    "Stra\u00dfe \u00c5ngstr\u00f6m",
    "\u0130stanbul \u0131",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "שלום עולם",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Xin chào thế giới",
    "你好，世界！",
    "我爱自然语言处理。",
    "こんにちは世界",
    "カタカナとひらがなと漢字",
    "안녕하세요 세계",
    "hello世界hello",
    "日本語のテキスト 😀",
    "😀",
    "😀😃😄",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "🇯🇵🇺🇸",
    "❤️",
    "emoji 🎉 in 🚀 text 🌍!",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙",
    "∀x ∈ ℝ: x² ≥ 0",
    "→ ← ↑ ↓ ⇒",
    "♠♥♦♣",
    "\u2581",  # the SentencePiece space symbol itself
    "\u2581hello \u2581 world",
    "Ġ Ċ ĉ",
    "\x00",
    "a\x00b",
    "\x01\x02\x03\x1f",
    "\x7f",
    "\x1c\x1d\x1e\x1f",  # separators that str.isspace() counts, \s does not
    "a" * 200,
    "ab" * 150,
    " " * 100,
    " " * 33 + "x",
    "\n" * 20,
    "\t" * 10 + "tabs",
    "supercalifragilisticexpialidocious",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz",
    "antidisestablishmentarianism " * 5,
    "<|endoftext|>",
    "<|im_start|>user\nhi<|im_end|>",
    "<s>",
    "</s>",
    "<unk>",
    "<s> </s> <unk>",
    "[PAD151646]",
    "<|begin_of_text|><|start_header_id|>",
    "<|end|><|user|>",
    "<0x41>",
    "   leading and trailing   ",
    "multiple     spaces     between     words",
    "Mr. Smith's car isn't here , is it ? No !",
    "a . b , c ! d ? e ' f n't 'm 's 've 're",
    "wait ... what ?!",
    "Tabs\tand\tspaces \t mixed\t \t",
    " \u00a0 \u00a0",
    "x\r\n\r\ny",
    " \r\n",
    "\n\n\n  \n",
    "!\n",
    "hello!\n\n",
    "a\n\tb",
    "3 apples, 10 oranges and 1000 pears",
    "1 2 3 4 5 6 7 8 9 10",
    "$1234.56",
    "Version 3.10.12-rc1",
    "👋 Hello 世界 123 ٣ !?",
]

# Fragments the random mixes are built from.
_WORDS = [
    "the", "The", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tokenizer", "byte",
    "pair", "encoding", "Hello", "world", "I'm", "don't", "we'll", "it's", "You're", "they've",
    "über", "naïve", "café", "Ångström", "Привет", "мир", "Γειά", "שלום", "مرحبا", "नमस्ते",
    "你好", "世界", "こんにちは", "カタカナ", "안녕", "😀", "🎉", "👍🏽", "❤️", "∑", "π", "123",
    "4567", "89", "3.14", "1,000", "٣٤", "½", "(", ")", "[", "]", "{", "}", "!", "?", ".", ",",
    ";", ":", "'", '"', "-", "--", "_", "=", "+", "*", "/", "\\", "#", "@", "$", "%", "&", "|",
    "~", "^", "<", ">", "`", "def", "return", "x", "y", "i++", "->", "=>", "==", "!=", "<=",
    "a", "I", "z", "Q", "ß", "ǅ", "ᾼ", "\u0301", "\u200d", "e\u0301",
]
_SPACES = [" ", " ", " ", " ", "  ", "   ", "", "", "\n", "\n\n", "\t", " \n", "\r\n", "\u00a0", "\u3000"]


def _random_mixes(n: int, seed: int) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 24)
        parts = []
        for _ in range(k):
            parts.append(rng.choice(_WORDS))
            parts.append(rng.choice(_SPACES))
        s = "".join(parts)
        if rng.random() < 0.3:
            s = rng.choice(_SPACES) + s
        if rng.random() < 0.5:
            s = s.rstrip(" ")
        out.append(s)
    return out


def _random_codepoints(n: int, seed: int) -> list:
    """Strings of code points drawn from many blocks (assigned or not, no surrogates)."""
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0x00, 0x20), (0xA0, 0x2FF), (0x300, 0x36F), (0x370, 0x52F), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2100, 0x22FF),
              (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xFF00, 0xFFEF),
              (0x1F300, 0x1FAFF), (0x10000, 0x1007F), (0x1D400, 0x1D7FF), (0x20000, 0x2A6DF)]
    out = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, 40)):
            a, b = rng.choice(ranges)
            chars.append(chr(rng.randint(a, b)))
            if rng.random() < 0.2:
                chars.append(" ")
        out.append("".join(chars))
    return out


CORPUS = HARD + _random_mixes(300, seed=1234) + _random_codepoints(100, seed=99)

SPECIAL_CORPUS = [
    "<s>Hello",
    "<s> Hello</s>",
    "Hello</s><s>world",
    "<unk>x<s>",
    "<|endoftext|>",
    "a<|endoftext|>b",
    "<|endoftext|><|endoftext|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>",
    "<|system|>\nBe brief.<|end|>\n<|user|>\nhi<|end|>\n<|assistant|>\n",
    "<|im_start|><|im_start|>",
    "x<|im_end|>y<|endoftext|>z",
    "<|im_start",  # a prefix of a special token only
    "<|eot_id|> after",
    "[PAD151646][PAD151647] padded",
    "<repo_name>a/b<file_sep>x.py\ncode<|endoftext|>",
    "text before <s> and after </s>",
    "  <s>  ",
    "<s><s><s>",
]
