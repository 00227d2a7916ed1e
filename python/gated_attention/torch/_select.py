"""Which CUDA kernels the torch op runs on a device: a (chip, kernel) pair
for the forward and one for the backward, the arguments of
cuda.compile_kernel / compile_backward_kernels.

Compute capability 9.0 (H100, H200) runs the sm_90a kernels built on wgmma
(chip "sm_90a", kernel "wgmma": the warp-specialized forward, the
backward's dK/dV and dQ kernels) where the configuration fits them, and
the mma.sync kernels compiled for "sm_90" where it does not. Whether it
fits is the compiler's answer, not a copy of its rules: the configuration
is compiled for sm_90a with kernel=wgmma (disk-cached like every kernel),
and the tool falls back to mma.sync for head dims its wgmma kernels do not
take, which the launch description's "instructions" then says. Other
capabilities run the mma.sync kernels of their chip.

GATED_ATTENTION_CUDA_KERNEL chooses: "auto" (unset: DEFAULT), "wgmma"
(the same on 9.0, an error on other devices) or "mma-sync" (the mma.sync
kernels everywhere). GATED_ATTENTION_CUDA_PERSISTENT=1 makes the wgmma
forward persistent (its CTAs, one per SM, loop over the tiles, longest
first; off by default: docs/Design.md says why); kernels of other
targets do not loop and ignore it. Both are read when a configuration's
kernels are first made on a device (the first call, or warmup).
"""

import os

from .. import cuda

ENV = "GATED_ATTENTION_CUDA_KERNEL"
CHOICES = ("auto", "mma-sync", "wgmma")
# The choice when ENV is unset. "auto" runs wgmma on compute capability
# 9.0 where it fits; "mma-sync" would keep every device on mma.sync.
DEFAULT = "auto"

# Compute capabilities -> the chip of their mma.sync kernels.
MMA_SYNC_CHIPS = {(8, 0): "sm_80", (8, 6): "sm_86", (8, 9): "sm_89",
                  (9, 0): "sm_90"}
# ... and of their wgmma kernels.
WGMMA_CHIPS = {(9, 0): "sm_90a"}
# The chips warmup(chip=) names a device by.
CAPABILITIES = {**{c: cap for cap, c in MMA_SYNC_CHIPS.items()},
                **{c: cap for cap, c in WGMMA_CHIPS.items()}}


def choice(kernel=None):
    """`kernel` if given, else GATED_ATTENTION_CUDA_KERNEL, else DEFAULT;
    ValueError for anything but CHOICES."""
    source = "kernel"
    if kernel is None:
        kernel, source = os.environ.get(ENV) or DEFAULT, ENV
    if kernel not in CHOICES:
        raise ValueError(f"{source} must be one of {', '.join(CHOICES)}, "
                         f"got {kernel!r}")
    return kernel


PERSISTENT_ENV = "GATED_ATTENTION_CUDA_PERSISTENT"


def persistent(value=None):
    """`value` if given (a bool), else GATED_ATTENTION_CUDA_PERSISTENT ("1"
    or "0"; unset: False); ValueError for anything else."""
    if value is None:
        text = os.environ.get(PERSISTENT_ENV) or "0"
        if text not in ("0", "1"):
            raise ValueError(f"{PERSISTENT_ENV} must be 0 or 1, got "
                             f"{text!r}")
        return text == "1"
    if not isinstance(value, bool):
        raise ValueError(f"persistent must be True, False or None, got "
                         f"{value!r}")
    return value


def capability_of(chip):
    """The compute capability of a device of `chip` (warmup's chip=)."""
    if chip not in CAPABILITIES:
        raise ValueError(f"chip must be one of {', '.join(CAPABILITIES)} "
                         f"(the torch op's CUDA kernels), got {chip!r}")
    return CAPABILITIES[chip]


def mma_sync(capability):
    """The (chip, kernel) of the mma.sync kernels on `capability`."""
    return MMA_SYNC_CHIPS[tuple(capability)], "mma-sync"


def candidates(capability, kernel=None):
    """[(chip, kernel)] in order of preference on `capability` under
    `kernel` (choice()): the last, mma.sync, takes every configuration."""
    capability = tuple(capability)
    kernel = choice(kernel)
    fallback = mma_sync(capability)
    if kernel == "mma-sync":
        return [fallback]
    if capability not in WGMMA_CHIPS:
        if kernel == "wgmma":
            raise ValueError(
                f"{ENV}=wgmma: the wgmma kernels need compute capability "
                f"9.0 (sm_90a), this device has "
                f"{capability[0]}.{capability[1]}; use auto or mma-sync")
        return [fallback]
    return [(WGMMA_CHIPS[capability], "wgmma"), fallback]


def _pick(capability, kernel, fits):
    *preferred, fallback = candidates(capability, kernel)
    return next((t for t in preferred if fits(*t)), fallback)


def forward(cfg, capability, kernel=None):
    """The (chip, kernel) of the forward of `cfg` (compile_key'd) on
    `capability`: wgmma where the tool makes a wgmma kernel of it."""
    def fits(chip, kind):
        desc = cuda.compile_kernel(cfg, chip=chip, kernel=kind)[2]
        return desc["instructions"] == "wgmma"
    return _pick(capability, kernel, fits)


# The widest head dim whose wgmma backward has run right on a GPU. On an
# H200 (2026-12-04) the D 64 and 128 kernels passed torch-backward.py, and
# the D 256 ones (two consumer warpgroups) did not finish a 200-row case
# within 30 s: a hang, which no choice of the user's may risk, so wider
# heads take the mma.sync backward (right at every head dim on that run).
# Its cause (a setmaxnreg split beyond the CTA's register pool) is fixed
# and modelled by the emulator since; this stays until a GPU runs it.
WGMMA_BACKWARD_MAX_HEAD_DIM = 128


def backward(cfg, capability, kernel=None):
    """The (chip, kernel) of the backward of `cfg` on `capability`: wgmma
    where the tool makes its dK/dV and dQ kernels on wgmma and the head
    dims are at most WGMMA_BACKWARD_MAX_HEAD_DIM."""
    def fits(chip, kind):
        if max(cfg.d, cfg.dv) > WGMMA_BACKWARD_MAX_HEAD_DIM:
            return False
        try:
            kernels = cuda.compile_backward_kernels(cfg, chip=chip,
                                                    kernel=kind)
        except ValueError:
            return False   # mma.sync's compile gives the reason
        return any(desc["instructions"] == "wgmma"
                   for _, _, desc in kernels.values())
    return _pick(capability, kernel, fits)
