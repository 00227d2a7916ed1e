"""Compiled kernels kept on disk across processes.

A compile (gated-attention-opt, then llc or ptxas) takes seconds; a serving
process must not pay it on every start. Entries live in one directory:

- ``GATED_ATTENTION_CACHE_DIR`` if set (``off``: no disk cache),
- else ``$XDG_CACHE_HOME/gated-attention``, else ``~/.cache/gated-attention``;
- :func:`set_directory` overrides both for this process.

Every entry point uses it: the torch ops, ``ga.attention`` and
``ga.CpuAttention`` (host code: :func:`cpu_library`),
``gated_attention.cuda.compile_*``, ``ga.paged_attention``.
``GATED_ATTENTION_KERNEL_CACHE``, the old name of the variable for the
latter, is still read when ``GATED_ATTENTION_CACHE_DIR`` is not set (with a
DeprecationWarning).

An entry's name is a hash of what the artifact depends on (the MLIR, the
pipeline, the tool binary and the plugins it loads, the package version and,
for host code, the CPU), so a rebuilt tool or another machine's CPU is a
miss, never a stale kernel. Writers put files in place by atomic renames
and a sidecar ``.json`` (written last) holds the artifact's hash: readers
see a whole entry or none, and any number of processes may share the
directory. Every compile logs one line on the ``gated_attention`` logger.
"""

import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
import warnings

from . import _version, native, ptx, runner

log = logging.getLogger("gated_attention")

_FORMAT = 1
_override = None   # (True, path or None) once set_directory was called


def set_directory(path):
    """Keeps entries in `path` (created on first write) for the rest of this
    process; None keeps no disk cache (compiles stay in memory)."""
    global _override
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"cache directory must be a path or None, "
                         f"not {path!r}")
    _override = (True, None if path is None else os.fspath(path))


def directory():
    """The cache directory (see the module docstring), or None when off."""
    if _override is not None:
        return _override[1]
    env = os.environ.get("GATED_ATTENTION_CACHE_DIR")
    if env is None and "GATED_ATTENTION_KERNEL_CACHE" in os.environ:
        warnings.warn("GATED_ATTENTION_KERNEL_CACHE is deprecated: set "
                      "GATED_ATTENTION_CACHE_DIR (one cache for every entry "
                      "point)", DeprecationWarning, stacklevel=2)
        env = os.environ["GATED_ATTENTION_KERNEL_CACHE"]
    if env is not None:
        return None if env in ("", "off") else env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gated-attention")


def _file_identity(path):
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


_HOST_CPU = None


def host_cpu():
    """The CPU llc's -mcpu=native means (its 'Host CPU' line)."""
    global _HOST_CPU
    if _HOST_CPU is None:
        out = subprocess.run(
            [os.path.join(runner.llvm_dirs()[0], "llc"), "--version"],
            capture_output=True, text=True).stdout
        _HOST_CPU = next((line.split(":", 1)[1].strip()
                          for line in out.splitlines()
                          if "Host CPU" in line), "unknown")
    return _HOST_CPU


def tool_identity():
    """The tool and the plugins it loads, as files (path, size, mtime): what
    a compiled artifact depends on besides its inputs; None on a machine
    without the tool (a GPU machine running kernels compiled elsewhere)."""
    opt = shutil.which(runner.opt_path()) or runner.opt_path()
    if not os.path.exists(opt):
        return None
    return "\n".join([_file_identity(opt)] + [
        _file_identity(p) for p in runner.PLUGINS if os.path.exists(p)])


def key(*parts):
    """The entry name for an artifact depending on `parts` (strings) and on
    the tool, its plugins and the package version."""
    tool = tool_identity() or runner.opt_path()
    text = "\n".join([str(_FORMAT), _version.__version__, tool, *parts])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def lookup(name, suffix):
    """The path of the intact entry `name` + `suffix`, else None."""
    cache = directory()
    if cache is None:
        return None
    path = os.path.join(cache, name + suffix)
    try:
        with open(path + ".json") as f:
            meta = json.load(f)
        if meta.get("format") == _FORMAT and meta.get("sha256") == _sha256(
                path):
            return path
    except (OSError, ValueError, AttributeError):
        pass   # absent, being replaced, or damaged: a miss
    return None


def store(name, suffix, src):
    """Puts the file `src` into the cache as entry `name` + `suffix`;
    returns its path there (`src` itself when the cache is off or cannot
    be written: the compile is not lost, only not kept)."""
    cache = directory()
    if cache is None:
        return src
    path = os.path.join(cache, name + suffix)
    try:
        os.makedirs(cache, exist_ok=True)
        with open(src, "rb") as f:
            data = f.read()
        ptx.write_atomically(path, data)
        # Last: marks the entry whole.
        ptx.write_atomically(path + ".json", json.dumps(
            {"format": _FORMAT, "sha256": hashlib.sha256(data).hexdigest()}))
    except OSError as e:
        log.warning("cannot write the kernel cache %s "
                    "(%s); kernels are compiled in every process", cache, e)
        return src
    return path


def load_record(name):
    """The record (a dict) that save_record kept as `name`, else None."""
    cache = directory()
    if cache is None:
        return None
    try:
        with open(os.path.join(cache, name + ".json")) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None   # absent, or from a broken writer
    if not isinstance(record, dict) or record.get("format") != _FORMAT:
        return None
    return record


def save_record(name, record):
    """Keeps `record` (a dict of JSON values) as `name` in the cache (in
    one atomic rename); nothing when the cache is off or not writable."""
    cache = directory()
    if cache is None:
        return
    try:
        os.makedirs(cache, exist_ok=True)
        ptx.write_atomically(os.path.join(cache, name + ".json"), json.dumps(
            {**record, "format": _FORMAT}))
    except OSError as e:
        log.warning("cannot write the kernel cache %s (%s)", cache, e)


def cpu_library(text, what, pipeline=("--gated-attention-to-llvm",)):
    """The shared library (native.SharedLibrary, with OpenMP) that
    `pipeline` makes of MLIR `text` for this CPU: the cache's entry, else
    compiled (logged as `what`) and stored there."""
    name = key("cpu", host_cpu(), *pipeline, text)
    path = lookup(name, ".so")
    if path is None:
        with compile_logged(what):
            built = native.SharedLibrary(text, pipeline, openmp=True)
            path = store(name, ".so", built.path)
        if path == built.path:   # no disk cache: keep its directory
            return built
    return native.SharedLibrary.load(path)


def variant(cfg):
    """`cfg` described without the sizes a kernel takes at run time."""
    dynamic = set(cfg.dynamic) | {"dyn"}
    return ",".join(p for p in cfg.describe().split(",")
                    if p.split("=")[0] not in dynamic)


class compile_logged:
    """Context manager logging one line per compile, with its duration."""

    def __init__(self, what, cache=False):
        # `cache`: where the result is kept (False: this module's directory).
        self.what, self.cache = what, cache

    def __enter__(self):
        self.start = time.monotonic()
        log.info("compiling %s", self.what)

    def __exit__(self, kind, *_):
        if kind is None:
            cache = directory() if self.cache is False else self.cache
            log.info("compiled %s in %.1f s (%s)", self.what,
                     time.monotonic() - self.start,
                     f"cached in {cache}" if cache else "disk cache off")
