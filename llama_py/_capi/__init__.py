"""The ctypes binding layer: llama.h mirrored section by section, one module each
(`llama_py.llama_cpp` re-exports them all, with llama-cpp-python's names; use that).

    common    typedefs, enums, constants, callback types, process-wide functions
    model     llama_model_params, loading, accessors, metadata
    context   llama_context_params, llama_batch, contexts, memory, state, decode, outputs
    vocab     tokens, special tokens, tokenize / detokenize
    sampling  the sampler structs and functions, PythonSampler, TokenDataArray
    extra     quantization, chat templates, the entry points of unimplemented features

Nothing here knows about `Llama` or the server (llama_py._runtime builds on this layer).
"""
