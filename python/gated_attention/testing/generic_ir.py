"""MLIR's generic op form, parsed into the ops the emulator interprets: each
op's results, name, operands, attributes (as text), result types and
regions, from `--mlir-print-op-generic` output."""

import re


_OP = re.compile(r'^(?:(%[\w]+)(?::(\d+))? = )?"([\w.]+)"\((.*?)\)(.*)$')


class Op:
    __slots__ = ("results", "name", "operands", "attrs", "regions", "types")

    def __init__(self, results, name, operands, attrs, types):
        self.results, self.name, self.operands = results, name, operands
        self.attrs, self.types, self.regions = attrs, types, []


class Block:
    def __init__(self, args):
        self.args, self.ops = args, []


def _split_types(text):
    """Top-level comma-separated types of '(a, b)' or 'a'."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _parse_op(line):
    m = _OP.match(line)
    if not m:
        raise ValueError(f"cannot parse: {line[:120]}")
    res, count, name, operands, rest = m.groups()
    results = []
    if res:
        results = [res] if not count else [f"{res}#{i}" for i in range(int(count))]
    operands = [o.strip() for o in operands.split(",") if o.strip()]
    types = ""
    if " : " in rest:
        types = rest[rest.rindex(" : ") + 3:]
    return Op(results, name, operands, rest, types)


def parse_function(lines, start):
    """Parses the op at lines[start] with its regions; returns (op, next)."""
    line = lines[start].strip()
    op = _parse_op(line)
    i = start + 1
    if not line.endswith("({"):
        return op, i
    while True:
        block = Block([])
        if lines[i].strip().startswith("^"):
            block.args = re.findall(r"(%[\w]+):", lines[i])
            i += 1
        while True:
            s = lines[i].strip()
            if s.startswith("}"):
                break
            sub, i = parse_function(lines, i)
            block.ops.append(sub)
        op.regions.append(block)
        s = lines[i].strip()
        i += 1
        if s.startswith("}, {"):
            continue
        op.types = s[s.rindex(" : ") + 3:] if " : " in s else ""
        op.attrs = op.attrs + s
        return op, i


def find_kernel(generic_text, name):
    lines = generic_text.split("\n")
    for i, line in enumerate(lines):
        if '"gpu.func"' in line:
            op, _ = parse_function(lines, i)
            if f'sym_name = "{name}"' in op.attrs:
                return op
    raise KeyError(f"no gpu.func {name}")


def _result_type(op):
    return op.types.split("->")[-1].strip() if "->" in op.types else ""


def _attr_int(op, key):
    return int(re.search(key + r" = (-?\d+)", op.attrs).group(1))


def _positions(op, key):
    m = re.search(key + r" = array<i64(?:: ([-\d, ]+))?>", op.attrs)
    return [int(x) for x in m.group(1).split(",")] if m and m.group(1) else []
