"""Records where the tool of the build tree is, if there is one.

pip builds a local directory in place, so this file's directory is the
repository's python/: when ../build/bin/gated-attention-opt exists, the
installed package keeps its path (gated_attention/_build_tree.json) and
runner finds the tool without environment variables. Everything else is
in pyproject.toml.
"""

import json
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        opt = os.path.join(here, "..", "build", "bin", "gated-attention-opt")
        if os.path.exists(opt):
            path = os.path.join(self.build_lib, "gated_attention",
                                "_build_tree.json")
            with open(path, "w") as f:
                json.dump({"opt": os.path.realpath(opt)}, f)


setup(cmdclass={"build_py": BuildPy})
