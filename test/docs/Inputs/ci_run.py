""".ci/run stops where its first step fails: a copy of it runs with
stand-ins for the scripts and cmake it calls, which record that they ran,
and must exit non-zero without reaching the sanitizer and fuzz steps when
the set-up fails (the first command of the README's `setup && cmake`
line: `set -e` alone does not stop there) and when the test suite fails.
A passing run reaches every step. Usage: ci_run.py SRC_ROOT WORK_DIR."""

import os
import shutil
import stat
import subprocess
import sys

src, work = sys.argv[1], sys.argv[2]


def stand_in(path, exit_code):
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\necho \"$0 $*\" >> \"$CI_RAN\"\nexit {exit_code}\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


def run(setup_rc, cmake_rc):
    root = os.path.join(work, f"setup{setup_rc}-cmake{cmake_rc}")
    shutil.rmtree(root, ignore_errors=True)
    for d in (".ci", "scripts", "bin"):
        os.makedirs(os.path.join(root, d))
    shutil.copy(os.path.join(src, ".ci", "run"), os.path.join(root, ".ci"))
    stand_in(os.path.join(root, "scripts", "setup"), setup_rc)
    stand_in(os.path.join(root, "bin", "cmake"), cmake_rc)
    for name in ("check-sanitizers", "fuzz"):
        stand_in(os.path.join(root, "scripts", name), 0)
    ran = os.path.join(root, "ran")
    env = dict(os.environ, CI_RAN=ran,
               PATH=os.path.join(root, "bin") + os.pathsep +
               os.environ["PATH"])
    rc = subprocess.run(["bash", os.path.join(root, ".ci", "run")],
                        env=env, cwd=root, capture_output=True).returncode
    steps = [os.path.basename(line.split()[0])
             for line in open(ran).read().splitlines()]
    return rc, steps


rc, steps = run(1, 0)
assert rc != 0 and steps == ["setup"], (rc, steps)
rc, steps = run(0, 1)
assert rc != 0 and steps == ["setup", "cmake"], (rc, steps)
rc, steps = run(0, 0)
assert rc == 0 and steps == ["setup", "cmake", "check-sanitizers",
                             "fuzz"], (rc, steps)
print("PASS .ci/run stops at a failing set-up or suite, runs every step "
      "otherwise")
