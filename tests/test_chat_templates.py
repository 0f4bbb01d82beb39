"""llama_chat_apply_template against the model families' published Jinja chat templates.

The oracle is each family's template text as its publisher ships it (tokenizer_config.json on
Hugging Face), rendered by jinja2's sandbox the way transformers renders it (trim_blocks,
lstrip_blocks). The engine never executes that text: it recognises the family from markers in
it and lays the conversation out in C. Both must give the same string, less the leading BOS
text (llama_tokenize adds the BOS token itself).

Where the built-in layout is known to differ from a family's template the case is marked
xfail(strict=True) with the difference spelled out, so fixing chat.c turns it into a failure
that asks for the mark to be removed.
"""
from __future__ import annotations

import ctypes
from typing import Dict, List, Optional

import pytest

import llama_py.llama_cpp as C

jinja2 = pytest.importorskip("jinja2")
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

# ---- the published templates (verbatim, as the strings in each model's tokenizer_config.json) ----

# teknium/OpenHermes-2.5-Mistral-7B and other ChatML models (no default system message)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' "
          "+ '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

# meta-llama/Llama-2-7b-chat-hf
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
          "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
          "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
          "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
          "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
          "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
          "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
          "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
          "{% endfor %}")

# meta-llama/Meta-Llama-3-8B-Instruct
LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' "
          "+ message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}"
          "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")

# HuggingFaceH4/zephyr-7b-beta (also TinyLlama-1.1B-Chat)
ZEPHYR = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
          "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
          "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
          "{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")

# mistralai/Mistral-7B-Instruct-v0.1
MISTRAL_V01 = ("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
               "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
               "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
               "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
               "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}")

# mistralai/Mamba-Codestral-7B-v0.1: the v0.3 layout without tools (system text on the last user turn)
MISTRAL_V3 = ('{%- if messages[0]["role"] == "system" %}\n {%- set system_message = messages[0]["content"] %}\n'
              ' {%- set loop_messages = messages[1:] %}\n{%- else %}\n {%- set loop_messages = messages %}\n'
              '{%- endif %}\n{{- bos_token }}\n{%- for message in loop_messages %}\n {%- if message["role"] == "user" %}\n'
              ' {%- if loop.last and system_message is defined %}\n'
              ' {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}\n {%- else %}\n'
              ' {{- "[INST] " + message["content"] + "[/INST]" }}\n {%- endif %}\n'
              ' {%- elif message["role"] == "assistant" %}\n {{- " " + message["content"] + eos_token }}\n {%- else %}\n'
              ' {{- raise_exception("Only user and assistant roles are supported, with optional system message!") }}\n'
              ' {%- endif %}\n{%- endfor %}')

# microsoft/Phi-3.5-mini-instruct
PHI3 = ("{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n' + "
        "message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
        "'<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + "
        "'<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}"
        "{{ eos_token }}{% endif %}")

# google/gemma-2-9b-it (and gemma-7b-it): no system role
GEMMA2 = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
          "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
          "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
          "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
          "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")

# google/gemma-3-*-it (text part): the system text opens the first user turn
GEMMA3 = ("{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- if messages[0]['content'] is string -%}\n"
          "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n    {%- else -%}\n"
          "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n    {%- endif -%}\n"
          "    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n"
          "    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n"
          "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
          "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
          "    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n"
          "    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
          "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
          "    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n"
          "    {%- elif message['content'] is iterable -%}\n        {%- for item in message['content'] -%}\n"
          "            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n"
          "            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n"
          "            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n"
          "        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n    {{ '<end_of_turn>\n' }}\n"
          "{%- endfor -%}\n{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n")

# family -> (template, bos_token, eos_token, the built-in name it must be detected as)
FAMILIES: Dict[str, tuple] = {
    "chatml": (CHATML, "", "<|im_end|>", "chatml"),
    "llama2": (LLAMA2, "<s>", "</s>", "llama2-sys"),
    "llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>", "llama3"),
    "zephyr": (ZEPHYR, "<s>", "</s>", "zephyr"),
    "mistral-v0.1": (MISTRAL_V01, "<s>", "</s>", None),
    "mistral-v3": (MISTRAL_V3, "<s>", "</s>", "mistral-v3"),
    "phi3": (PHI3, "<s>", "<|endoftext|>", "phi3"),
    "gemma2": (GEMMA2, "<bos>", "<eos>", "gemma"),
    "gemma3": (GEMMA3, "<bos>", "<eos>", "gemma"),
}

SYS = {"role": "system", "content": "You are a helpful assistant"}
U1 = {"role": "user", "content": "Hello"}
A1 = {"role": "assistant", "content": "Hi there"}
U2 = {"role": "user", "content": "Who are you"}
CONVERSATIONS: Dict[str, List[Dict[str, str]]] = {
    "user": [U1],
    "system-user": [SYS, U1],
    "multi-turn": [U1, A1, U2],
    "system-multi-turn": [SYS, U1, A1, U2],
    "padded": [{"role": "user", "content": "  Hello there \n"}],
}

# (family, conversation, add_generation_prompt or None for both) -> how chat.c differs
KNOWN_DIFFERENCES = {
    # The built-in chatml adds no default system message; SmolLM2's own template does (not in this table).
}


def _known(family: str, conv: str, add: bool) -> Optional[str]:
    for (f, c, a), why in KNOWN_DIFFERENCES.items():
        if f == family and c in (conv, "*") and a in (add, None):
            return why
    return None


def _render_jinja(template: str, bos: str, eos: str, messages, add: bool) -> Optional[str]:
    """The template rendered as transformers does it; None where the template refuses the conversation."""
    class Refused(Exception):
        pass

    def raise_exception(msg):
        raise Refused(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        out = env.from_string(template).render(messages=messages, add_generation_prompt=add, bos_token=bos,
                                               eos_token=eos)
    except Refused:
        return None
    return out[len(bos):] if bos and out.startswith(bos) else out


def apply_template(tmpl: Optional[bytes], messages, add: bool) -> Optional[str]:
    """llama_chat_apply_template through the ctypes mirror, sized by a first call as C callers do."""
    arr = (C.llama_chat_message * max(1, len(messages)))()
    keep = []
    for i, m in enumerate(messages):
        r, c = m["role"].encode(), m["content"].encode()
        keep += [r, c]
        arr[i].role, arr[i].content = r, c
    n = C.llama_chat_apply_template(tmpl, arr, len(messages), add, None, 0)
    if n < 0:
        return None
    buf = ctypes.create_string_buffer(n + 1)
    assert C.llama_chat_apply_template(tmpl, arr, len(messages), add, buf, n + 1) == n
    return buf.raw[:n].decode()


def _cases():
    for family in FAMILIES:
        for conv in CONVERSATIONS:
            for add in (True, False):
                why = _known(family, conv, add)
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                yield pytest.param(family, conv, add, id=f"{family}-{conv}-{'gen' if add else 'nogen'}", marks=marks)


@pytest.mark.parametrize("family,conv,add", list(_cases()))
def test_builtin_matches_published_template(family, conv, add, lib_path):
    template, bos, eos, _ = FAMILIES[family]
    msgs = CONVERSATIONS[conv]
    expected = _render_jinja(template, bos, eos, msgs, add)
    if expected is None:
        pytest.skip(f"the {family} template itself refuses this conversation")
    got = apply_template(template.encode(), msgs, add)
    assert got == expected


@pytest.mark.parametrize("family", [f for f, v in FAMILIES.items() if v[3]])
def test_detected_family_is_the_named_builtin(family, lib_path):
    template, _, _, name = FAMILIES[family]
    for msgs in CONVERSATIONS.values():
        for add in (True, False):
            assert apply_template(template.encode(), msgs, add) == apply_template(name.encode(), msgs, add)


def test_builtin_names_listed(lib_path):
    n = C.llama_chat_builtin_templates(None, 0)
    arr = (ctypes.c_char_p * n)()
    assert C.llama_chat_builtin_templates(arr, n) == n
    names = {arr[i].decode() for i in range(n)}
    assert {"chatml", "llama2", "llama3", "zephyr", "phi3", "gemma"} <= names
    assert any(x.startswith("mistral") for x in names)
    for name in names:
        assert apply_template(name.encode(), [U1], True)


def test_unknown_template_is_refused(lib_path):
    assert apply_template(b"{{ messages[0]['content'] }}", [U1], True) is None
    assert apply_template(b"no-such-template", [U1], True) is None


def test_small_buffer_reports_full_length(lib_path):
    arr = (C.llama_chat_message * 1)()
    arr[0].role, arr[0].content = b"user", b"Hello"
    full = apply_template(b"chatml", [U1], True)
    buf = ctypes.create_string_buffer(8)
    assert C.llama_chat_apply_template(b"chatml", arr, 1, True, buf, 8) == len(full.encode())
    assert buf.raw[:8] == full.encode()[:8]
