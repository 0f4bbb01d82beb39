"""llama_py._abi: the one layout check, against the library's own sizeof/offsetof tables."""
import ctypes

import pytest

from llama_py import _abi
from llama_py._lib import LlamaError


@pytest.fixture(scope="module")
def tables(lib_path):
    from llama_py import ggml
    return ggml.ggml_abi_struct_size, ggml.ggml_abi_field_offset


@pytest.fixture(scope="module")
def llama_tables(lib_path):
    from llama_py import llama_cpp
    return llama_cpp.llama_abi_struct_size, llama_cpp.llama_abi_field_offset


def _struct(name, fields, **extra):
    return type(name, (ctypes.Structure,), {"_fields_": fields, **extra})


def test_real_structs_pass(tables, llama_tables):
    from llama_py import ggml, llama_cpp
    for pystruct, c_name in ggml.ABI_CHECKED_STRUCTS + [(ggml.gguf_init_params, "gguf_init_params")]:
        _abi.check_struct_layout(pystruct, c_name, *tables)
    for pystruct, c_name in [(llama_cpp.llama_batch, "llama_batch"),
                             (llama_cpp.llama_model_kv_override_value, "llama_model_kv_override_value")]:
        _abi.check_struct_layout(pystruct, c_name, *llama_tables)


def test_wrong_type_is_rejected_naming_the_field(tables):
    from llama_py import ggml
    # mem_size declared 32-bit in a packed struct: the next field lands at offset 4 instead of 8
    wrong = _struct("ggml_init_params_wrong", [("mem_size", ctypes.c_uint32)] + list(ggml.ggml_init_params._fields_[1:]),
                    _pack_=4)
    with pytest.raises(_abi.ABIMismatch, match=r"ggml_init_params\.mem_buffer: offset 4 in Python, 8 in the library"
                                               r".*'mem_buffer' of Python ggml_init_params_wrong"):
        _abi.check_struct_layout(wrong, "ggml_init_params", *tables)
    # gguf_init_params with its two fields swapped
    moved = _struct("gguf_init_params_moved", [("ctx", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)])
    with pytest.raises(_abi.ABIMismatch, match=r"gguf_init_params\.ctx: offset 0 in Python, 8 in the library"):
        _abi.check_struct_layout(moved, "gguf_init_params", *tables)


def test_missing_extra_and_unknown_fields(tables):
    from llama_py import ggml
    short = _struct("short", list(ggml.ggml_init_params._fields_[:-1]))
    with pytest.raises(_abi.ABIMismatch, match=r"ggml_init_params: size .* last field 'mem_buffer'"):
        _abi.check_struct_layout(short, "ggml_init_params", *tables)
    longer = _struct("longer", list(ggml.ggml_init_params._fields_) + [("extra", ctypes.c_int64)])
    with pytest.raises(_abi.ABIMismatch, match=r"ggml_init_params: size .*unknown to the library: \['extra'\]"):
        _abi.check_struct_layout(longer, "ggml_init_params", *tables)
    renamed = _struct("renamed", [("size" if n == "mem_size" else n, t) for n, t in ggml.ggml_init_params._fields_])
    with pytest.raises(_abi.ABIMismatch, match=r"ggml_init_params: field 'size' .* is unknown"):
        _abi.check_struct_layout(renamed, "ggml_init_params", *tables)
    with pytest.raises(_abi.ABIMismatch, match=r"struct no_such_struct: .* does not describe"):
        _abi.check_struct_layout(ggml.ggml_init_params, "no_such_struct", *tables)


def test_union_is_checked_by_size(llama_tables):
    from llama_py import llama_cpp
    u = llama_cpp.llama_model_kv_override_value
    bigger = type("bigger", (ctypes.Union,), {"_fields_": list(u._fields_) + [("big", ctypes.c_char * 512)]})
    with pytest.raises(_abi.ABIMismatch, match=r"llama_model_kv_override_value: size 512 in Python"):
        _abi.check_struct_layout(bigger, "llama_model_kv_override_value", *llama_tables)


def test_version_mismatch_names_both():
    with pytest.raises(_abi.ABIMismatch, match=r"has ABI version 3, llama_py expects ABI version 1"):
        _abi.check_abi_version(1, 3)
    _abi.check_abi_version(2, 2)


def test_one_exception_type_old_names_and_bases(lib_path):
    from llama_py import ggml, llama_cpp
    assert ggml.ABIMismatch is _abi.ABIMismatch
    assert llama_cpp.LayoutMismatch is _abi.ABIMismatch
    # `except ImportError` (old LayoutMismatch) and `except LlamaError` (old ggml/gguf checks) still catch it
    assert issubclass(_abi.ABIMismatch, ImportError) and issubclass(_abi.ABIMismatch, LlamaError)
    # the mirror modules call the one function, not copies of it
    broken = _struct("llama_batch", list(llama_cpp.llama_batch._fields_)[::-1])
    with pytest.raises(ImportError, match=r"llama_batch\."):
        llama_cpp.check_struct_layout(broken, "llama_batch")
    wrong = _struct("ggml_init_params", list(ggml.ggml_init_params._fields_)[::-1])
    with pytest.raises(LlamaError, match=r"ggml_init_params\."):
        ggml.check_struct_layout(wrong, "ggml_init_params")
