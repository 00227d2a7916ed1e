"""The package's version: the one place it is written (CMake's project
VERSION must agree; a test checks)."""

__version__ = "0.1.0"
