"""Prints `<file> <sha256 prefix>` for every .ptx file in a directory, sorted:
the fingerprint that mma-sync-ptx.test compares with the recorded one."""

import hashlib
import pathlib
import sys

for path in sorted(pathlib.Path(sys.argv[1]).glob("*.ptx")):
    print(path.name, hashlib.sha256(path.read_bytes()).hexdigest()[:16])
