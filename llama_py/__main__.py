"""Command line: python -m llama_py run|chat|serve|bench|quantize|imatrix|gguf-dump|convert|pull.

    python -m llama_py run -p "The capital of France is" -n 32        # the demo model, pulled if needed
    python -m llama_py run -m model.gguf -p "Once upon a time" -n 64 --temp 0.7 --seed 1
    python -m llama_py chat                                          # one user message per line
    python -m llama_py serve --parallel 4                            # OpenAI-compatible server (.[server])
    python -m llama_py bench -m model.gguf -p 512 -n 128 -r 5
    python -m llama_py quantize in.gguf out.gguf Q4_K_M
    python -m llama_py gguf-dump model.gguf
    python -m llama_py convert HF_DIR --outfile model.gguf
    python -m llama_py pull                                          # fetch the demo model
"""
from __future__ import annotations

import argparse
import sys


def _add_sampling_args(p: argparse.ArgumentParser, temp: float) -> None:
    p.add_argument("--temp", type=float, default=temp, help="temperature; 0 = greedy (default %(default)s)")
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--min-p", type=float, default=0.05)
    p.add_argument("--repeat-penalty", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None, help="sampling seed (default: random)")
    p.add_argument("-t", "--threads", type=int, default=None, help="default: the physical cores")
    p.add_argument("-c", "--ctx-size", type=int, default=2048)
    p.add_argument("-v", "--verbose", action="store_true", help="show the library's log")


def _speed_line(perf: dict) -> str:
    def rate(n, ms):
        return n / (ms / 1000.0) if ms > 0 else 0.0
    return (f"prompt: {perf['n_p_eval']} tokens in {perf['t_p_eval_ms']:.0f} ms, "
            f"{rate(perf['n_p_eval'], perf['t_p_eval_ms']):.1f} t/s | "
            f"generation: {perf['n_eval']} tokens in {perf['t_eval_ms']:.0f} ms, "
            f"{rate(perf['n_eval'], perf['t_eval_ms']):.1f} t/s")


def _open_model(a, quiet: bool = False):
    from .llama import Llama
    from .pull import resolve_model
    path = resolve_model(a.model, quiet=quiet)
    # flash attention on, as llama.cpp's own tools have it on the CPU (the Llama class keeps
    # llama-cpp-python's default, off): fewer nodes per token, and the same cache bytes
    return Llama(path, n_ctx=a.ctx_size, n_threads=a.threads, verbose=a.verbose, flash_attn=True,
                 seed=a.seed if a.seed is not None else 0xFFFFFFFF)


def _cmd_run(argv) -> int:
    p = argparse.ArgumentParser(prog="python -m llama_py run", description="stream a completion of a prompt")
    p.add_argument("-m", "--model", default=None, help="GGUF file (default: the demo model, pulled if needed)")
    p.add_argument("-p", "--prompt", default="The capital of France is")
    p.add_argument("-n", "--n-predict", type=int, default=64, help="tokens to generate (-1: until the end)")
    _add_sampling_args(p, temp=0.8)
    a = p.parse_args(argv)
    with _open_model(a) as llm:
        sys.stdout.write(a.prompt)
        sys.stdout.flush()
        llm.reset_perf()
        for chunk in llm.create_completion(a.prompt, max_tokens=a.n_predict, temperature=a.temp, top_k=a.top_k,
                                           top_p=a.top_p, min_p=a.min_p, repeat_penalty=a.repeat_penalty,
                                           seed=a.seed, stream=True):
            sys.stdout.write(chunk["choices"][0]["text"])
            sys.stdout.flush()
        sys.stdout.write("\n")
        sys.stdout.flush()
        print(_speed_line(llm.perf()), file=sys.stderr)
    return 0


def _cmd_chat(argv) -> int:
    p = argparse.ArgumentParser(prog="python -m llama_py chat",
                                description="chat with the model's template; one user message per line of "
                                            "input, /exit or end of input to quit")
    p.add_argument("-m", "--model", default=None, help="GGUF file (default: the demo model, pulled if needed)")
    p.add_argument("-s", "--system", default="", help="system message (default: none, the model's own behaviour)")
    p.add_argument("-n", "--n-predict", type=int, default=256, help="most tokens per reply")
    _add_sampling_args(p, temp=0.2)
    a = p.parse_args(argv)
    interactive = sys.stdin.isatty()
    with _open_model(a) as llm:
        messages = [{"role": "system", "content": a.system}] if a.system else []
        while True:
            if interactive:
                sys.stdout.write("> ")
                sys.stdout.flush()
            line = sys.stdin.readline()
            if not line:
                break
            line = line.rstrip("\n")
            if line.strip() in ("/exit", "/quit"):
                break
            if not line.strip():
                continue
            if not interactive:
                print(f"> {line}")
            messages.append({"role": "user", "content": line})
            reply = ""
            llm.reset_perf()
            while True:
                try:
                    for chunk in llm.create_chat_completion(messages, max_tokens=a.n_predict, temperature=a.temp,
                                                            top_k=a.top_k, top_p=a.top_p, min_p=a.min_p,
                                                            repeat_penalty=a.repeat_penalty, seed=a.seed,
                                                            stream=True):
                        piece = chunk["choices"][0]["delta"].get("content", "")
                        reply += piece
                        sys.stdout.write(piece)
                        sys.stdout.flush()
                    break
                except ValueError:  # the conversation no longer fits: forget the oldest exchange
                    first = 1 if messages[0]["role"] == "system" else 0
                    if len(messages) - first <= 1:
                        print(f"error: the message does not fit the context ({a.ctx_size} tokens, -c)",
                              file=sys.stderr)
                        messages.pop()
                        break
                    del messages[first:first + 2]
            sys.stdout.write("\n")
            sys.stdout.flush()
            if a.verbose:
                print(_speed_line(llm.perf()), file=sys.stderr)
            if messages and messages[-1]["role"] == "user":
                messages.append({"role": "assistant", "content": reply})
    return 0


def _cmd_pull(argv) -> int:
    from .pull import MODELS, pull_model
    p = argparse.ArgumentParser(prog="python -m llama_py pull",
                                description="fetch a test model (default: the demo model, SmolLM2-135M-Instruct) "
                                            "into the cache ($LLAMA_PY_CACHE, else ~/.cache/llama_py)")
    p.add_argument("name", nargs="?", default="smollm2", choices=["smollm2", *MODELS], help="which model")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    a = p.parse_args(argv)
    print(pull_model(a.name, quiet=a.quiet))
    return 0


def _cmd_quantize(argv) -> int:
    from .quantize import main
    return main(argv)


def _cmd_imatrix(argv) -> int:
    from .imatrix import main
    return main(argv)


def _cmd_bench(argv) -> int:
    from .bench import main
    return main(argv)


def _cmd_gguf_dump(argv) -> int:
    from .gguf_dump import main
    return main(argv)


def _cmd_serve(argv) -> int:
    from .server.cli import main
    return main(argv)


def _cmd_convert(argv) -> int:
    from .convert import main  # imported only when asked for: it is the largest module
    return main(argv)


COMMANDS = {
    "run": (_cmd_run, "stream a completion (default model: the demo model)"),
    "chat": (_cmd_chat, "chat with the model's chat template"),
    "serve": (_cmd_serve, "OpenAI-compatible HTTP server with continuous batching"),
    "bench": (_cmd_bench, "llama-bench-style prompt / generation speed rows"),
    "quantize": (_cmd_quantize, "rewrite a GGUF model in another type"),
    "imatrix": (_cmd_imatrix, "importance matrix from a text (for quantize --imatrix)"),
    "gguf-dump": (_cmd_gguf_dump, "print a GGUF file's metadata and tensors"),
    "convert": (_cmd_convert, "convert a Hugging Face checkpoint to GGUF"),
    "pull": (_cmd_pull, "download the demo model (SmolLM2-135M-Instruct)"),
}


def _usage() -> str:
    lines = ["usage: python -m llama_py COMMAND [options]   (COMMAND -h for its options)", "", "commands:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if not argv or argv[0] not in COMMANDS:
        if argv:
            print(f"unknown command {argv[0]!r}", file=sys.stderr)
        print(_usage(), file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]][0](argv[1:])
    except (FileNotFoundError, RuntimeError) as e:  # LlamaError is a RuntimeError
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
