"""Python package of the gated-attention project.

stdlib + numpy (Debian's python3-numpy, run with /usr/bin/python3); bf16
results are ``ml_dtypes.bfloat16`` arrays, which needs PyPI's ml_dtypes
(``pip install ml_dtypes``; scripts/setup puts it in the repository's
.venv). Everything else works without it.
The user-facing API (``compiler``, re-exported here): ``attention`` runs
the op on numpy arrays on the CPU or a CUDA GPU, ``attention_backward``
its gradients (CPU), ``attention_lse`` the output and its log-sum-exp
(CPU); ``attention_reference``
is its float64 reference; ``paged_attention`` / ``paged_attention_reference``
(``paged``) the serving form over a paged KV cache; ``attention_ir`` / ``qwen3_next.attention_block`` build
MLIR; ``compile_cpu`` / ``compile_ptx`` compile it; ``load_plugin`` and
``register_gate`` add gate variants. Modules:

- ``compiler``: build, compile and run (the API above);
- ``reference``: the float64 numpy reference of ``gated_attention.attention``;
- ``dtypes``: rounding to f16 / bf16, their raw bits and numpy types;
- ``accuracy``: the error bound every comparison with the reference uses;
- ``config``: an attention configuration (shapes, variant, element type);
- ``mlir``: writes MLIR text for an attention op and a runnable test module;
- ``runner``: compiles with gated-attention-opt, runs with mlir-runner, parses
  ``printMemrefF32`` output;
- ``native``: compile to a host shared library and call it through ctypes;
- ``ptx``: PTX and launch descriptions out of ``gpu.binary`` ops (and
  ptxas reports and checks);
- ``cuda``: runs those kernels on a CUDA GPU through the driver API;
- ``kernel_cache``: compiled kernels kept on disk across processes;
- ``models.qwen3_next``: the Qwen3-Next attention block as a graph, and its
  reference; ``models.gated_lm``: a small Qwen3-Next-shaped language model
  in torch, to train with the op (needs torch);
- ``torch``: the op for PyTorch tensors (``torch.ops.gated_attention``;
  needs torch, imported only there);
- ``testing``: the project's test and emulation tools (not the user API).
"""

from ._version import __version__

# The API is imported on first use, so that `python3 -m gated_attention.X`
# does not import X twice.
_API = {"AttentionConfig", "CpuAttention", "CpuAttentionBackward",
        "CpuAttentionLse", "CudaAttention", "ToolError", "attention",
        "attention_backward", "attention_lse",
        "attention_ir", "compile_cpu", "compile_ptx", "attention_reference",
        "config_for", "load_plugin", "register_gate"}
_PAGED = {"paged_attention", "paged_attention_reference"}
__all__ = sorted(_API | _PAGED | {"gated_attention_reference", "qwen3_next"})


def __dir__():
    # The lazily imported API, which the module's __dict__ does not hold yet.
    return __all__ + ["__version__"]


def __getattr__(name):
    import importlib
    if name in _API:
        return getattr(importlib.import_module(".compiler", __name__), name)
    if name in _PAGED:
        return getattr(importlib.import_module(".paged", __name__), name)
    if name == "gated_attention_reference":
        return importlib.import_module(".reference", __name__).gated_attention_reference
    if name == "qwen3_next":
        return importlib.import_module(".models.qwen3_next", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
