"""Command line: python -m llama_py run|chat|bench|quantize|gguf-dump|pull."""
from __future__ import annotations

import argparse
import sys
import time


def _cmd_run(argv) -> int:
    p = argparse.ArgumentParser(prog="llama_py run", description="stream a completion")
    p.add_argument("-m", "--model", default=None, help="GGUF file (default: the demo model, pulled if needed)")
    p.add_argument("-p", "--prompt", default="The capital of France is")
    p.add_argument("-n", "--n-predict", type=int, default=64)
    p.add_argument("--temp", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("-t", "--threads", type=int, default=None)
    p.add_argument("-c", "--ctx-size", type=int, default=2048)
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    from .llama import Llama
    from .pull import resolve_model
    llm = Llama(resolve_model(a.model), n_ctx=a.ctx_size, n_threads=a.threads, verbose=a.verbose,
                seed=a.seed if a.seed is not None else 0xFFFFFFFF)
    with llm:
        n_prompt = len(llm.tokenize(a.prompt, add_bos=True, special=True))
        sys.stdout.write(a.prompt)
        sys.stdout.flush()
        t0 = time.perf_counter()
        t_first = None
        n_gen = 0
        for chunk in llm.create_completion(a.prompt, max_tokens=a.n_predict, temperature=a.temp, top_k=a.top_k,
                                           top_p=a.top_p, seed=a.seed, stream=True):
            if t_first is None:
                t_first = time.perf_counter()
            text = chunk["choices"][0]["text"]
            if chunk.get("usage"):
                n_gen = chunk["usage"]["completion_tokens"]
            sys.stdout.write(text)
            sys.stdout.flush()
        t1 = time.perf_counter()
        sys.stdout.write("\n")
        t_first = t_first or t1
        pp = n_prompt / max(t_first - t0, 1e-9)
        tg = max(n_gen - 1, 0) / max(t1 - t_first, 1e-9)
        print(f"\nprompt: {n_prompt} tokens, {pp:.1f} t/s | generation: {n_gen} tokens, {tg:.1f} t/s",
              file=sys.stderr)
    return 0


def _cmd_chat(argv) -> int:
    p = argparse.ArgumentParser(prog="llama_py chat", description="interactive chat with the model's template")
    p.add_argument("-m", "--model", default=None)
    p.add_argument("-s", "--system", default="You are a helpful assistant.")
    p.add_argument("-n", "--n-predict", type=int, default=256)
    p.add_argument("--temp", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("-t", "--threads", type=int, default=None)
    p.add_argument("-c", "--ctx-size", type=int, default=2048)
    a = p.parse_args(argv)
    from .llama import Llama
    from .pull import resolve_model
    with Llama(resolve_model(a.model), n_ctx=a.ctx_size, n_threads=a.threads) as llm:
        messages = [{"role": "system", "content": a.system}] if a.system else []
        while True:
            try:
                line = input("> ")
            except EOFError:
                break
            if line.strip() in ("/exit", "/quit"):
                break
            if not line.strip():
                continue
            messages.append({"role": "user", "content": line})
            reply = ""
            for chunk in llm.create_chat_completion(messages, max_tokens=a.n_predict, temperature=a.temp,
                                                    seed=a.seed, stream=True):
                piece = chunk["choices"][0]["delta"].get("content", "")
                reply += piece
                sys.stdout.write(piece)
                sys.stdout.flush()
            sys.stdout.write("\n")
            messages.append({"role": "assistant", "content": reply})
    return 0


def _cmd_pull(argv) -> int:
    p = argparse.ArgumentParser(prog="llama_py pull", description="fetch the demo model (SmolLM2-135M-Instruct)")
    p.parse_args(argv)
    from .pull import pull_demo_model
    print(pull_demo_model())
    return 0


def _cmd_quantize(argv) -> int:
    from .quantize import main
    return main(argv)


def _cmd_bench(argv) -> int:
    from .bench import main
    return main(argv)


def _cmd_gguf_dump(argv) -> int:
    from .gguf_dump import main
    return main(argv)


COMMANDS = {
    "run": _cmd_run,
    "chat": _cmd_chat,
    "bench": _cmd_bench,
    "quantize": _cmd_quantize,
    "gguf-dump": _cmd_gguf_dump,
    "pull": _cmd_pull,
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: python -m llama_py {" + ",".join(COMMANDS) + "} [options]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
