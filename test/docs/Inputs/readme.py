"""Runs the commands of README.md, and of the documents it sends users to,
as a newcomer pastes them.

    readme.py README.md [DOC.md ...] --build BUILD_DIR [--list]

README.md is the repository root's; the other documents (bench/README.md,
docs/Reliability.md, docs/Design.md) are checked the same way. Runs, from
the repository root:
  - every ```sh block, with bash -e -o pipefail;
  - every ```python block, with .venv/bin/python (else /usr/bin/python3)
    and PYTHONPATH=python, as the README says;
  - every inline `command with arguments` whose first word is one of this
    project's commands (build/bin/..., scripts/..., bench/...,
    /usr/bin/python3, /usr/lib/llvm-22/bin/..., cmake --build/--install,
    gated-attention-opt), with stdin empty;
unless SKIP below names it with a reason (set-up, the suite itself,
benchmarks, a GPU or the CUDA toolkit, installing into /usr/local). A SKIP
entry that matches nothing in any document fails the run, so the list
cannot go stale silently. Also fails on: a placeholder in a command ('…',
' ... ', <angle>), a path a document names that does not exist (links
relative to the document, `examples/...`-style paths to the root), a
README worked example (```mlir block headed `// examples/qwen.mlir`) that
is not the file's text, and README's two commands not being the main job
(`./scripts/setup && ./scripts/run-example`) and a test command that .ci/run
runs as written.

`build/` (and `cmake --build build`) in a command means BUILD_DIR, the build
under test; `/tmp/` means a private temporary directory, removed at the end.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# (regex on a command's text, reason): commands that are not run.
SKIP = [
    (r"cmake --build build --target check-gated-attention",
     "the test suite itself"),
    (r"bench/run-cpu", "benchmark (minutes)"),
    (r"bench/compile_time\.py", "benchmark (minutes)"),
    (r"bench/cpu_paged\.py", "benchmark (writes bench/results)"),
    (r"bench/cpu_decode\.py", "benchmark (writes bench/results)"),
    (r"bench/cpu_attention\.py", "benchmark (writes bench/results)"),
    (r"bench/fma_peak\.py", "benchmark (writes bench/results)"),
    (r"bench/cpu_attention_ab\.py", "benchmark (minutes of timed runs)"),
    (r"bench/cpu_backward\.py", "benchmark (writes bench/results)"),
    (r"bench/cpu_backward_ab\.py", "benchmark (minutes of timed runs)"),
    (r"bench/torch_paged_ab\.py", "benchmark (a minute of timed runs)"),
    (r"# on the GPU$", "runs on the GPU machine"),
    (r"bench/sass_report\.py",
     "writes bench/results; Pipelines/sass-report.test runs it"),
    (r"examples/train_qwen3_next\.py",
     "three training runs (minutes); Examples/train-qwen3-next.test runs it"),
    (r"scripts/device-check", "needs a CUDA GPU"),
    (r"test/python/paged_random\.py \d{3}",
     "a search of minutes; the suite runs it with 10 cases"),
    (r"scripts/fuzz|scripts/check-sanitizers",
     "sanitizer build and fuzzing (tens of minutes)"),
    (r"--gated-attention-to-ptx\b", "needs the CUDA toolkit (libdevice)"),
    (r"^cmake --install build$", "installs into /usr/local"),
    (r"^/usr/lib/llvm-22/bin/lit ", "runs tests of the suite from inside it"),
    (r"^\./scripts/setup(?: --tests)?$", "set-up itself (apt, PyPI; root)"),
]
# Rewrites before running: set-up is done (it needs root and apt).
REWRITE = [
    (r"^\./scripts/setup(?: --tests)? && ", ""),
]
MAIN_JOB = "./scripts/setup && ./scripts/run-example"
# The first word of an inline command.
INLINE = re.compile(r"^(?:[A-Z_]+=\S+ )*(?:build/bin/\S+|\./scripts/\S+|"
                    r"scripts/\S+|bench/\S+|/usr/bin/python3|\.venv/bin/python|"
                    r"/usr/lib/llvm-22/bin/\S+|cmake --(?:build|install)|"
                    r"gated-attention-opt) \S")
PLACEHOLDER = re.compile(r"…|<[a-z_]+>|\s\.\.\.(\s|$)")
TIMEOUT = 600


def fenced(text, lang):
    return re.findall(r"^```%s\n(.*?)^```" % lang, text, re.M | re.S)


def commands(text):
    """(kind, text) of every command of the README, in order."""
    found = [("sh", b) for b in fenced(text, "sh")]
    found += [("python", b) for b in fenced(text, "python")]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    for span in re.findall(r"`([^`]+)`", prose):
        span = " ".join(span.split())
        if INLINE.match(span):
            found.append(("inline", span))
    return found


def missing_paths(root, doc, text):
    """The paths `doc` names that do not exist: its links (relative to the
    document) and its `examples/...`-style paths (relative to the root)."""
    here = os.path.dirname(os.path.join(root, doc))
    links = set(re.findall(r"\]\(((?!https?:)[^)#\s]+)\)", text))
    names = set(re.findall(r"`((?:examples|test|bench|scripts|docs|python)"
                           r"/[\w./-]*[\w/])`", text))
    return sorted({p for p in links if not os.path.exists(
        os.path.join(here, p))} | {p for p in names if not os.path.exists(
            os.path.join(root, p))})


def check_two_commands(root, text, problems):
    """README's sh blocks hold the main job and a test command, each one
    line, and .ci/run runs that test command as written."""
    blocks = [b.strip() for b in fenced(text, "sh")]
    if MAIN_JOB not in blocks:
        problems.append(f"README has no ```sh block that is the main job, "
                        f"'{MAIN_JOB}'")
    tests = [b for b in blocks if "--target check-gated-attention" in b]
    if len(tests) != 1 or "\n" in tests[0]:
        problems.append("README must have one ```sh block of one line that "
                        "runs the test suite")
        return
    ci = open(os.path.join(root, ".ci", "run")).read().splitlines()
    if tests[0] not in ci:
        problems.append(f".ci/run does not run README's test command "
                        f"'{tests[0]}'")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("readme")
    p.add_argument("docs", nargs="*",
                   help="more documents, checked and run the same way")
    p.add_argument("--build", required=True)
    p.add_argument("--list", action="store_true",
                   help="print what would run, run nothing")
    args = p.parse_args()
    root = os.path.dirname(os.path.abspath(args.readme))
    build = os.path.abspath(args.build)
    text = open(args.readme).read()
    problems = []
    docs = [("README.md", text)]
    for doc in args.docs:
        docs.append((os.path.relpath(os.path.abspath(doc), root),
                     open(doc).read()))

    # Paths the documents point to exist.
    for doc, doc_text in docs:
        for path in missing_paths(root, doc, doc_text):
            problems.append(f"{doc} names {path}, which does not exist")
    check_two_commands(root, text, problems)

    # The worked example is the file the commands use.
    example = open(os.path.join(root, "examples", "qwen.mlir")).read()
    for block in fenced(text, "mlir"):
        if block.startswith("// examples/qwen.mlir\n"):
            if block.split("\n", 1)[1] not in example:
                problems.append("the worked example's mlir block is not "
                                "the text of examples/qwen.mlir")
            break
    else:
        problems.append("no ```mlir block headed '// examples/qwen.mlir'")

    python = os.path.join(root, ".venv", "bin", "python")
    if not os.access(python, os.X_OK):
        python = "/usr/bin/python3"
    tmp = tempfile.mkdtemp(prefix="readme-")
    used = set()
    run = skipped = failed = 0
    found = [(doc, kind, cmd) for doc, doc_text in docs
             for kind, cmd in commands(doc_text)]
    try:
        for i, (doc, kind, cmd) in enumerate(found, 1):
            first = next((line for line in cmd.splitlines() if line.strip()
                          and not line.startswith("#")), "")
            label = f"{doc}: {kind} {i}: {first[:60]}"
            if kind != "python" and PLACEHOLDER.search(cmd):
                problems.append(f"{label}: a placeholder")
            reason = None
            for pattern, why in SKIP:
                if re.search(pattern, cmd, re.M):
                    used.add(pattern)
                    reason = reason or why
            if reason:
                skipped += 1
                print(f"SKIP {label}  [{reason}]")
                continue
            script = cmd
            for pattern, repl in REWRITE:
                script = re.sub(pattern, repl, script, flags=re.M)
            if build != os.path.join(root, "build"):
                script = re.sub(r"(?<![\w./-])build/", build + "/", script)
                script = re.sub(r"(cmake --(?:build|install) )build\b",
                                r"\g<1>" + build, script)
            script = re.sub(r"(?<![\w.-])/tmp/", tmp + "/", script)
            if args.list:
                print(f"RUN {label}")
                continue
            if kind == "python":
                argv = [python, "-c", script]
                env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"))
            else:
                argv = ["bash", "-e", "-o", "pipefail", "-c", script]
                env = None
            start = time.time()
            try:
                proc = subprocess.run(argv, cwd=root, env=env, text=True,
                                      stdin=subprocess.DEVNULL,
                                      capture_output=True, timeout=TIMEOUT)
                rc, out = proc.returncode, proc.stdout + proc.stderr
            except subprocess.TimeoutExpired:
                rc, out = "timeout", ""
            run += 1
            print(f"{'PASS' if rc == 0 else 'FAIL'} {label}  "
                  f"({time.time() - start:.1f} s)", flush=True)
            if rc != 0:
                failed += 1
                print(f"exit {rc}:\n{out[-3000:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for pattern, _ in SKIP:
        if pattern not in used:
            problems.append(f"SKIP entry {pattern!r} matches no command")
    for problem in problems:
        print(f"error: {problem}")
    print(f"README: {run} commands run, {skipped} skipped, {failed} failed, "
          f"{len(problems)} problems")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
