"""The op's CUDA kernel, launched on torch's current stream.

The tensor-core kernel of --gated-attention-to-ptx (f16 / bf16), compiled
once per configuration (cuda.compile_kernel, kept in the disk cache),
loaded into the device's primary context (torch's) and launched through the
driver API on `torch.cuda.current_stream()` with the tensors' pointers. A
call allocates nothing but the output (torch's caching allocator) and never
synchronizes with the host, so it can be captured in a CUDA graph.

The kernel reads q, k, v and the gate and writes the output through their
(batch, head, row) strides, so [B, S, H, D] tensors, q and the gate as the
strided halves of one projection (Qwen3-Next's [q | gate]) and the output
in the caller's layout need no copies. Row strides are constants of a
kernel (gated_attention.row_strides): each layout of the rows compiles its
own kernel once (logged, kept in the disk cache); batch and head strides
are launch arguments. What the kernel cannot take is copied first, one
`.contiguous()` on the stream: a tensor whose last dim is strided, whose
rows overlap, or whose address or row starts are not aligned as the
kernel's loads need (16 bytes for q, k and v: strides a multiple of 8
elements; the gate 4 bytes, 2 when headwise); with D = Dv, K and V that are
laid out differently (one stride pair serves both).

A decode step (Sq = 1) whose B x Hq one-row CTAs would leave the GPU idle
runs split-KV instead (compiled on the first decode step, or by warmup
with Sq = 1): the dense kernel's split form over parts of the keys into
f32 partials, then the merge kernel, which applies the gate once. The
merge reads and writes packed [B x H, W] rows: a gate or output that is
not (q's gate half of a projection) keeps the one-kernel launch. The
partials come from torch's caching allocator, on the stream: graph
capture still works.

Given an f32 `lse` [B, Hq, Sq] (contiguous), a call also writes the op's
log-sum-exp into it (what the backward reads): the kernels of the op that
returns it, compiled apart (their own cache entries; the kernels without
it are unchanged), write it in their epilogue, or split-KV's merge does.

Which kernels: _select decides (chip, kernel) once per configuration and
device. On compute capability 9.0 the forward is the sm_90a wgmma kernel
where the head dims fit it (GATED_ATTENTION_CUDA_KERNEL=mma-sync keeps
mma.sync); it reads q, k and v through TMA maps of [B, H, S, D]-contiguous
buffers, so those in another layout are copied first (the gate and the
output keep their strides). A decode step (Sq = 1) runs the mma.sync
kernels on every device: their CTAs pack the query heads of a K/V head,
and they read the K/V cache in place. The wgmma kernel's TMA maps are made
once per buffer address (cuda.Backend), each a synchronous 128-byte copy
to the device: a call on q, k or v at an address not seen before waits
for the device once (a warm-up call on the tensors a CUDA graph captures
makes them before the capture).

Host time: the first call of each signature (shapes, strides, alignment;
_signature) plans its launches (copies, split-KV partials, kernel
parameters as ctypes values: cuda.PreparedLaunch); later calls only
write their buffers' addresses into those and launch (bench/
torch_op_overhead.py times it).
"""

import dataclasses
import threading

import torch

from .. import compiler, cuda, launch, launcher
from . import _args, _select


def capability_of(device):
    """The compute capability of `device`, or NotImplementedError where
    the op has no kernels for it."""
    capability = tuple(torch.cuda.get_device_capability(device))
    if capability not in _select.MMA_SYNC_CHIPS:
        raise NotImplementedError(
            f"gated_attention: no CUDA kernel for compute capability "
            f"{capability[0]}.{capability[1]} ({torch.cuda.get_device_name(device)});"
            f" it has kernels for "
            f"{', '.join(_select.MMA_SYNC_CHIPS.values())}")
    return capability


def chip_of(device):
    """The chip of `device`'s mma.sync kernels (the paged op's)."""
    return _select.mma_sync(capability_of(device))[0]


def strides_of(x):
    """{"B", "H", "S"} strides of a [B, H, S, D] view. A dim of size 1 is
    never stepped over, so its stride is free (torch may leave any value
    there): 0 for B and H, the row's width for S."""
    b, h, s, d = x.shape
    sb, sh, ss, _ = x.stride()
    return {"B": 0 if b == 1 else sb, "H": 0 if h == 1 else sh,
            "S": d if s == 1 else ss}


def _map_operands(desc):
    """The operands `desc`'s kernel reads through TMA maps."""
    return {a["name"] for a in desc["arguments"]
            if a["kind"] == "tensor_map"}


def contiguous_aligned(x):
    """Whether `x` is contiguous and 16-byte aligned: what a TMA map and
    the backward's kernels read in place (else a copy, `copy_of`)."""
    return x.is_contiguous() and x.data_ptr() % 16 == 0


def _readable(desc, name, x):
    """Whether the kernel can read operand `name` from `x` in place: rows
    contiguous, not overlapping, aligned as the kernel's loads need; a TMA
    map's operand [B, H, S, D]-contiguous, 16-byte aligned (TMA's rule)."""
    if name in _map_operands(desc):
        return contiguous_aligned(x)
    if x.shape[-1] != 1 and x.stride(-1) != 1:
        return False
    strides = strides_of(x)
    if strides["S"] < x.shape[-1]:
        return False
    try:
        launch.check_layout(desc, name, x.data_ptr(), strides,
                            x.element_size())
    except ValueError:
        return False
    return True


def copy_of(x):
    """A contiguous copy of `x`: a fresh buffer (torch's allocator aligns
    it), since a contiguous but misaligned x is no better."""
    return x.clone(memory_format=torch.contiguous_format)


def readable(desc, name, x):
    """`x` as the kernel can read it for operand `name`: itself, or a
    contiguous copy (see the module's docstring)."""
    return x if _readable(desc, name, x) else copy_of(x)


def plan(desc, cfg, q, k, v, g, out):
    """(buffers, strides, rows) of a launch on [B, H, S, D] views: the
    tensors the kernel reads (copies where it cannot read the caller's),
    their {"B", "H", "S"} strides (not of those read through TMA maps,
    which are contiguous), and the row strides to compile the kernel for
    ({operand: stride} where not the row's width)."""
    q = readable(desc, "q", q)
    k, v = readable(desc, "k", k), readable(desc, "v", v)
    # With D = Dv one stride pair serves K and V.
    if cfg.d == cfg.dv and strides_of(k) != strides_of(v):
        k, v = (x if x.is_contiguous() else copy_of(x) for x in (k, v))
    buffers = {"q": q, "k": k, "v": v, "out": out}
    if g is not None:
        buffers["gate"] = readable(desc, "gate", g)
    maps = _map_operands(desc)
    strides = {n: strides_of(x) for n, x in buffers.items() if n not in maps}
    rows = {n: s["S"] for n, s in strides.items()
            if s["S"] != buffers[n].shape[-1]}
    return buffers, strides, rows


def packed_rows(x):
    """Whether a [B, H, 1, W] view is packed [B x H, W] rows, which the
    split-KV merge kernel reads and writes."""
    b, h, s, w = x.shape
    strides = strides_of(x)
    return (s == 1 and (b == 1 or strides["B"] == h * w)
            and (h == 1 or strides["H"] == w))


def _check_supported(cfg):
    reason = compiler.tensor_core_unsupported(cfg)
    if reason:
        raise ValueError(f"gated_attention on CUDA runs the tensor-core "
                         f"kernel: {reason}")


def targets(cfg, capability, kernel=None):
    """(forward, decode): the (chip, kernel) of `cfg`'s kernels on
    `capability` (_select.forward), and of its decode steps (mma.sync)."""
    return (_select.forward(cfg, capability, kernel),
            _select.mma_sync(capability))


def looping(target, persistent=None):
    """Whether the forward on `target` (chip, kernel) is the persistent
    kernel: _select.persistent(`persistent`), and only wgmma's loops."""
    return _select.persistent(persistent) and target[1] == "wgmma"


def ahead_of_time(cfg, chip, q, k, v, g, out, lse=False, kernel=None,
                  persistent=None):
    """Compiles into the disk cache the kernels that a launch on these [B,
    H, S, D] views (meta tensors too) loads on a device of `chip` ("sm_90"
    and "sm_90a" both name compute capability 9.0) under `kernel`
    (_select.choice) and `persistent` (_select.persistent): the row-major
    one and the one for their rows; with `lse` those that write the
    log-sum-exp (and the row-major one without, which the device loads
    first)."""
    capability = _select.capability_of(chip)
    _check_supported(cfg)
    forward, decode = targets(cfg, capability, kernel)
    loops = looping(forward, persistent)
    # What a CudaKernel loads when made: the forward's row-major kernel.
    cuda.compile_kernel(cfg, chip=forward[0], kernel=forward[1],
                        persistent=loops)
    target = decode if q.shape[2] == 1 else forward
    loops = loops and target == forward
    _, _, desc = cuda.compile_kernel(cfg, chip=target[0], kernel=target[1],
                                     lse=lse, persistent=loops)
    _, _, rows = plan(desc, cfg, q, k, v, g, out)
    if rows:
        cuda.compile_kernel(cfg, chip=target[0], kernel=target[1],
                            row_strides=rows, lse=lse, persistent=loops)
    if q.shape[2] == 1:
        cuda.compile_decode_kernels(cfg, chip=decode[0], kernel=decode[1],
                                    row_strides=rows or None, lse=lse)


# Call signatures a CudaKernel keeps the launches of (the oldest goes).
_MAX_SIGNATURES = 256
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(device):
    """torch's current stream on `device`, a CUstream handle (without
    making a torch.cuda.Stream)."""
    if _RAW_STREAM is None:
        return torch.cuda.current_stream(device).cuda_stream
    return _RAW_STREAM(device.index or 0)


def _signature(q, k, v, g, out, lse):
    """What a call's launches depend on besides the buffers' addresses:
    shapes, strides, the addresses' alignment (up to the 16 bytes the
    kernels need), the lse tensor's layout."""
    key = [q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(),
           out.shape, out.stride(), q.data_ptr() & 15, k.data_ptr() & 15,
           v.data_ptr() & 15, out.data_ptr() & 15]
    if g is not None:
        key += [g.shape, g.stride(), g.data_ptr() & 15]
    if lse is not None:
        key += [lse.dtype, lse.shape, lse.stride(), lse.device,
                lse.data_ptr() & 15]
    return tuple(key)


class _Call:
    """What the calls of one signature do: copy `copies` (operand names;
    the kernel cannot read them in place), allocate `partials` ((name, f32
    elements)), then run `launches` (PreparedLaunch-like callables of
    ({name: address}, stream))."""

    __slots__ = ("copies", "partials", "launches")

    def __init__(self, copies, partials, launches):
        self.copies, self.partials, self.launches = copies, partials, launches


def _prepared(backend, kernel, planned):
    """`planned`'s launch of `kernel` on any addresses: the backend's
    PreparedLaunch, or (a backend without one: the emulator) the Launch
    with its buffers replaced."""
    if hasattr(backend, "prepare"):
        return backend.prepare(kernel.handle, planned)

    def run(addresses, stream):
        arguments = tuple(
            dataclasses.replace(a, buffer=addresses[a.name])
            if isinstance(a, (launcher.Memref, launcher.TensorMap)) else a
            for a in planned.arguments)
        backend.launch(kernel.handle,
                       dataclasses.replace(planned, arguments=arguments),
                       stream)
    return run


class CudaKernel:
    """The kernels of one configuration on one device: one per layout of
    the rows (gated_attention.row_strides), each compiled on first use;
    the launches of each call signature, prepared on its first call."""

    def __init__(self, cfg, device):
        _check_supported(cfg)
        self.cfg, self.device = cfg, device
        # (chip, kernel) of the forward and of a decode step.
        self._target, self._decode_target = targets(
            cfg, capability_of(device))
        self._persistent = looping(self._target)
        self._lock = threading.Lock()
        self._kernels, self._calls = {}, {}
        with torch.cuda.device(device):
            self._backend = cuda.Backend(cuda.Driver(device.index or 0))
        self._sm_count = torch.cuda.get_device_properties(
            device).multi_processor_count
        # The row-major kernel, compiled (or loaded) now: its description
        # also gives the alignment every layout needs.
        self._desc = self._kernel({}).desc

    def _target_of(self, sq):
        """(target, row-major description) of a launch on `sq` rows."""
        if sq == 1 and self._decode_target != self._target:
            return self._decode_target, self._kernel(
                {}, target=self._decode_target).desc
        return self._target, self._desc

    def _cached(self, key, compile_kernels):
        """The kernel(s) under `key`, made by `compile_kernels()` ->
        {name: (kernel name, PTX, description)} on first use."""
        kernels = self._kernels.get(key)
        if kernels is None:
            with self._lock:
                kernels = self._kernels.get(key)
                if kernels is None:
                    compiled = compile_kernels()
                    with torch.cuda.device(self.device):
                        kernels = {name: self._backend.kernel(ptx, desc)
                                   for name, (_, ptx, desc)
                                   in compiled.items()}
                    self._kernels[key] = kernels
        return kernels

    def _kernel(self, rows, lse=False, target=None):
        """The kernel for `rows` ({operand: row stride}, others row-major)
        on `target` (chip, kernel; default the forward's); with `lse` the
        one that writes the log-sum-exp."""
        chip, kind = target or self._target
        loops = self._persistent and (chip, kind) == self._target
        key = (chip, kind, lse, loops) + tuple(sorted(rows.items()))
        return self._cached(key, lambda: {"dense": cuda.compile_kernel(
            self.cfg, chip=chip, kernel=kind,
            row_strides=dict(key[4:]) or None, lse=lse,
            persistent=loops)})["dense"]

    def _decode(self, rows, lse=False):
        """The kernels of a decode step whose K/V rows are `rows`: its own
        (dense, packing the query heads of a K/V head) and split-KV's
        (dense-split, split-merge); `lse` as for _kernel."""
        chip, kind = self._decode_target
        key = ("decode", lse) + tuple(sorted(rows.items()))
        return self._cached(key, lambda: cuda.compile_decode_kernels(
            self.cfg, chip=chip, kernel=kind,
            row_strides=dict(key[2:]) or None, lse=lse))

    def prepare(self, q, k, v, g, out, lse=False):
        """Compiles (or loads) the kernel for these views' rows (`lse`: the
        one that writes the log-sum-exp)."""
        target, desc = self._target_of(q.shape[2])
        self._kernel(plan(desc, self.cfg, q, k, v, g, out)[2], lse, target)

    def _check_lse(self, lse, q):
        """Raises ValueError unless `lse` is what the kernels write the
        log-sum-exp of [B, Hq, Sq, D] `q` into."""
        shape = tuple(q.shape[:3])
        if (lse.dtype != torch.float32 or tuple(lse.shape) != shape
                or not lse.is_contiguous() or lse.device != q.device
                or lse.data_ptr() % 4):
            raise ValueError(
                f"gated_attention: lse must be a contiguous float32 tensor "
                f"of shape {list(shape)} ([B, Hq, Sq]) on {q.device}, got "
                f"{lse.dtype} {list(lse.shape)} on {lse.device}"
                + ("" if lse.is_contiguous() else " (not contiguous)"))

    def _plan_call(self, q, k, v, g, out, lse):
        """The _Call of a call on these tensors: what every call of their
        signature (_signature) does."""
        if lse is not None:
            self._check_lse(lse, q)
        with_lse = lse is not None
        target, desc = self._target_of(q.shape[2])
        buffers, strides, rows = plan(desc, self.cfg, q, k, v, g, out)
        given = {"q": q, "k": k, "v": v, "gate": g, "out": out}
        copies = tuple(n for n, x in buffers.items() if x is not given[n])
        # A kernel without a gate still takes a (never read) gate buffer.
        buffers.setdefault("gate", out)
        if with_lse:
            buffers["lse"] = lse
        b, _, sq, _ = buffers["q"].shape
        skv = buffers["k"].shape[2]
        kernels = {"dense": self._kernel(rows, with_lse, target)}
        splits = 1
        if sq == 1 and packed_rows(buffers["gate"]) and packed_rows(out):
            # The decode step's kernels: split-KV's where it pays, else
            # its own, whose CTAs pack the query heads of a K/V head.
            kernels = self._decode(rows, with_lse)
            splits = launch.decode_split_count(
                kernels["dense-split"].desc, b, skv, self._sm_count)
        # The f32 partials of split-KV, from torch's allocator.
        partials = tuple((name, n) for name, (_, n) in launcher.partials(
            kernels, splits, b=b, sq=sq, skv=skv).items())
        sized = {n: (x.data_ptr(), x.numel()) for n, x in buffers.items()}
        sized.update((name, (0, n)) for name, n in partials)
        launches = []
        for layout in launcher.layouts(kernels, splits):
            kernel = kernels[layout]
            planned = kernel.plan(
                sized, None if layout == "split-merge" else strides,
                splits=splits, b=b, sq=sq, skv=skv,
                sm_count=self._sm_count)
            if 0 not in planned.grid:   # (CUDA rejects an empty grid)
                launches.append(_prepared(self._backend, kernel, planned))
        return _Call(copies, partials, tuple(launches))

    def __call__(self, q, k, v, g, out, lse=None):
        """[B, H, S, D] views; `out` one the kernel can write (new_output:
        contiguous in the caller's layout); `lse`, when given, the f32
        [B, Hq, Sq] contiguous tensor the log-sum-exp is written into."""
        key = _signature(q, k, v, g, out, lse)
        call = self._calls.get(key)
        if call is None:
            call = self._plan_call(q, k, v, g, out, lse)
            with self._lock:
                _args.remember(self._calls, key, call, _MAX_SIGNATURES)
        tensors = {"q": q, "k": k, "v": v, "out": out,
                   "gate": out if g is None else g}
        for name in call.copies:
            tensors[name] = copy_of(tensors[name])
        if lse is not None:
            tensors["lse"] = lse
        for name, n in call.partials:
            tensors[name] = out.new_empty(n, dtype=torch.float32)
        addresses = {n: x.data_ptr() for n, x in tensors.items()}
        current = getattr(self._backend, "is_current", None)
        if current is None or current():
            stream = current_stream(self.device)
            for prepared in call.launches:
                prepared(addresses, stream)
            return
        # Another device's context is current: make this one's current.
        with torch.cuda.device(self.device):
            stream = current_stream(self.device)
            for prepared in call.launches:
                prepared(addresses, stream)
