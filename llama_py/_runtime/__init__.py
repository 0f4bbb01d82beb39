"""The runtime shared by `Llama` (llama_py.llama) and the server (llama_py.server): everything
between the ctypes binding layer (llama_py._capi, re-exported as llama_py.llama_cpp) and an
OpenAI-shaped request, written once.

    text      tokenizing / detokenizing over a vocab handle; the stop-string, UTF-8-safe TextStream
    sampling  SamplingParams (every option Llama and the server accept) -> a llama_sampler chain
    chat      chat-template rendering (sandboxed Jinja or the built-in formats), the grammar a
              response_format / tool_choice asks for, and the OpenAI chat shapes of the result
              (tool calls included, streamed as OpenAI streams them)
    embed     embeddings of token lists with the context's pooling, several sequences per decode

Neither `Llama` nor the server builds any of these over raw ctypes itself.
"""
