"""Compile with gated-attention-opt, run with mlir-runner, parse the prints."""

import json
import os
import re
import shutil
import subprocess

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _recorded_opt():
    """The build tree's tool that `pip install ./python` recorded."""
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "_build_tree.json")) as f:
            return json.load(f)["opt"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _default_opt():
    """gated-attention-opt of the source tree's build/ (this package run
    from the repository, or pip-installed from it), else of the install
    this package is part of (`cmake --install`: <prefix>/lib/python3.X/
    dist-packages; pip: <venv>/bin), else PATH."""
    import sys
    for path in (os.path.join(_REPO, "build", "bin", "gated-attention-opt"),
                 _recorded_opt(),
                 os.path.join(_REPO, "..", "..", "bin", "gated-attention-opt"),
                 os.path.join(sys.prefix, "bin", "gated-attention-opt")):
        if path and os.path.exists(path):
            return os.path.normpath(path)
    return shutil.which("gated-attention-opt") or "gated-attention-opt"


def llvm_dirs(opt=None):
    """(tools dir, library dir) of the LLVM that gated-attention-opt (or
    `opt`) was built with, from the llvm-paths.json CMake writes beside it
    (<bin>/../share/gated-attention/); GATED_ATTENTION_LLVM_DIR (an LLVM
    prefix with bin/ and lib/) overrides it."""
    prefix = os.environ.get("GATED_ATTENTION_LLVM_DIR")
    if prefix:
        return os.path.join(prefix, "bin"), os.path.join(prefix, "lib")
    opt = shutil.which(opt or opt_path())
    if opt:
        path = os.path.join(os.path.dirname(os.path.realpath(opt)), "..",
                            "share", "gated-attention", "llvm-paths.json")
        try:
            with open(path) as f:
                found = json.load(f)
            return found["llvm_tools_dir"], found["llvm_library_dir"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    raise ToolError(
        f"cannot tell which LLVM gated-attention-opt was built with: no "
        f"share/gated-attention/llvm-paths.json beside "
        f"{opt or 'gated-attention-opt (not found)'}; set "
        f"GATED_ATTENTION_LLVM_DIR to its LLVM prefix (e.g. /usr/lib/llvm-22)")


def opt_path():
    """gated-attention-opt: GATED_ATTENTION_OPT, else the default."""
    return os.environ.get("GATED_ATTENTION_OPT") or _default_opt()


def tool_paths():
    """Tools from the environment (lit sets these), else those of the LLVM
    the tool was built with (llvm_dirs)."""
    opt = opt_path()
    paths = {"opt": opt}
    names = {"runner": ("MLIR_RUNNER", "bin", "mlir-runner"),
             # The runner utilities (printMemrefF32) and the OpenMP runtime
             # that the parallel loops of --gated-attention-to-llvm call into.
             "runner_utils": ("MLIR_RUNNER_UTILS", "lib",
                              "libmlir_runner_utils.so"),
             "c_runner_utils": ("MLIR_C_RUNNER_UTILS", "lib",
                                "libmlir_c_runner_utils.so"),
             "libomp": ("LIBOMP", "lib", "libomp.so")}
    for key, (env, kind, name) in names.items():
        value = os.environ.get(env)
        if not value:
            tools, libs = llvm_dirs(opt)
            value = os.path.join(tools if kind == "bin" else libs, name)
        paths[key] = value
    paths["libs"] = [paths.pop("runner_utils"), paths.pop("c_runner_utils"),
                     paths.pop("libomp")]
    return paths


# Dialect plugins (gate variants) every gated-attention-opt call loads:
# GATED_ATTENTION_PLUGINS (os.pathsep-separated), then load_plugin().
PLUGINS = [p for p in os.environ.get("GATED_ATTENTION_PLUGINS", "").split(
    os.pathsep) if p]


def load_plugin(path):
    """Makes every later compile load the dialect plugin at `path`. Raises
    FileNotFoundError if there is no such file, ToolError if the tool
    cannot load it (not a shared library, no plugin entry point, another
    MLIR's API version)."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    _run([opt_path(), f"--load-dialect-plugin={path}", "--version"], "")
    if path not in PLUGINS:
        PLUGINS.append(path)


def opt_command(*args, opt=None):
    """gated-attention-opt (or `opt`) with the loaded plugins and `args`."""
    return [opt or opt_path(),
            *[f"--load-dialect-plugin={p}" for p in PLUGINS], *args]


class ToolError(RuntimeError):
    pass


# An MLIR diagnostic of severity error: `<loc>: error: ...` or `error: ...`.
_ERROR = re.compile(r"^(?:\S.*?:\d+:\d+: )?error: ", re.M)


def _run(cmd, stdin):
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True,
                              text=True)
    except OSError as e:
        raise ToolError(f"cannot run {cmd[0]}: {e} (build the project, or "
                        f"set GATED_ATTENTION_OPT / MLIR_RUNNER)") from None
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                        f"{proc.stderr[-4000:]}")
    # A tool that reported an error and still exited 0 (some upstream
    # passes do) made output that must not be used.
    m = _ERROR.search(proc.stderr)
    if m:
        raise ToolError(f"{' '.join(cmd)} reported an error (and exited "
                        f"0):\n{proc.stderr[m.start():][:4000]}")
    return proc.stdout


def compile_module(text, pipeline=("--gated-attention-to-llvm",), opt=None):
    """MLIR text -> the text `pipeline` makes of it (LLVM-dialect MLIR by
    default); `opt` overrides the tool. Raises ToolError with the tool's
    diagnostics."""
    return _run(opt_command(*pipeline, opt=opt), text)


def run_module(llvm_text, entry="main", extra_libs=()):
    """Runs a lowered module's `entry` (no arguments, void) on the CPU."""
    tools = tool_paths()
    libs = ",".join(list(tools["libs"]) + list(extra_libs))
    return _run([tools["runner"], "-O3", "-e", entry,
                 "-entry-point-result=void", f"-shared-libs={libs}"],
                llvm_text)


_NUMBER = re.compile(r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)",
                     re.IGNORECASE)
_HEADER = re.compile(r"Unranked Memref base@ = \S+ rank = (\d+) offset = \d+ "
                     r"sizes = \[([^\]]*)\] strides = \[[^\]]*\] data =")


def parse_memrefs(stdout):
    """Every tensor printed by printMemrefF32, in order, as float64 arrays."""
    headers = list(_HEADER.finditer(stdout))
    arrays = []
    for n, h in enumerate(headers):
        end = headers[n + 1].start() if n + 1 < len(headers) else len(stdout)
        sizes = [int(s) for s in h.group(2).split(",") if s.strip()]
        values = [float(v) for v in _NUMBER.findall(stdout[h.end():end])]
        expected = int(np.prod(sizes)) if sizes else 1
        if len(values) != expected:
            raise ToolError(f"memref {n}: {len(values)} values for sizes {sizes}")
        arrays.append(np.array(values, dtype=np.float64).reshape(sizes))
    return arrays
