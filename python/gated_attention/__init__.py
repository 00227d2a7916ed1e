"""Python helpers of the gated-attention project.

stdlib + numpy only (Debian's python3-numpy, run with /usr/bin/python3):

- ``reference``: the float64 numpy reference of ``gated_attention.attention``;
- ``dtypes``: rounding to f16 / bf16 and their raw bits;
- ``config``: an attention configuration (shapes, variant, element type);
- ``mlir``: writes MLIR text for an attention op and a runnable test module;
- ``runner``: compiles with gated-attention-opt, runs with mlir-runner, parses
  ``printMemrefF32`` output;
- ``native``: compile to a host shared library and call it through ctypes;
- ``ptx``: PTX and launch descriptions out of ``gpu.binary`` ops (and
  ptxas reports and checks);
- ``cuda``: runs those kernels on a CUDA GPU through the driver API;
- ``emulate``: runs the tensor-core kernel's IR on the CPU, warp by warp;
- ``models.qwen3_next``: the Qwen3-Next attention block as a graph, and its
  reference;
- ``check``: the command line harness the integration tests use;
- ``run_example``: the README's main job.
"""

from .config import AttentionConfig
from .reference import gated_attention_reference

__all__ = ["AttentionConfig", "gated_attention_reference"]
