# RUN: %PYTHON %s
# The launch-description schema (gated_attention.launch): what the tool
# writes is version 2 and valid, the grid follows from it, and every way a
# description can be unusable is an error that names the field.
import copy

from gated_attention import config, cuda, launch, mlir, ptx, runner

# A description written by the tool.
cfg = config.AttentionConfig(hq=4, hkv=2, sq=40, skv=40, d=64, dv=64,
                             causal=True, dtype="bf16")
_, _, desc = cuda.compile_kernel(cfg)
assert launch.validate(desc) is desc
assert (desc["schema"], desc["version"]) == (launch.SCHEMA, launch.VERSION)
rows = desc["rows_per_block"]
assert desc["grid"] == [["Sq", rows], ["Hq", 1], ["B", 1]], desc["grid"]
assert launch.grid(desc, b=3, sq=2 * rows + 1) == (3, 4, 3)
assert launch.grid(desc, b=2, sq=0) == (0, 4, 2)
# 5 parameters per memref (q, k, v, gate, out), one per index (Sq, Skv)
# and one per stride: (B, H) of q, of k and v together (D = Dv), of the
# gate and of out; rows are the kernel's constants.
assert launch.parameter_count(desc) == 27 + 8
strides = [(a["of"], a["dim"]) for a in desc["arguments"]
           if a["kind"] == "stride"]
assert strides == [(n, d) for n in (["q"], ["k", "v"], ["gate"], ["out"])
                   for d in ("B", "H")], strides
memrefs = {a["name"]: a for a in desc["arguments"] if a["kind"] == "memref"}
assert {n: a["row_alignment"] for n, a in memrefs.items()} == \
    {"q": 16, "k": 16, "v": 16, "gate": 4, "out": 4}
assert {n: a["row_stride"] for n, a in memrefs.items()} == \
    {"q": 64, "k": 64, "v": 64, "gate": 64, "out": 64}
# Layouts: row-major unless given; rows other than the kernel's, K and V
# apart, misaligned rows or addresses rejected with what broke them.
kv = {"B": 9 * 8, "H": 8 * 64 * 50, "S": 64}
lay = launch.layouts(desc, 2, 40, 50, {"k": kv, "v": kv})
assert lay["q"] == {"B": 4 * 40 * 64, "H": 40 * 64, "S": 64}, lay
assert lay["k"] == lay["v"] == kv, lay
for given, words in (({"q": {"B": 0, "H": 0, "S": 128}},
                      "rows 128 elements apart; the kernel was compiled for 64"),
                     ({"k": kv}, "operands k and v share their B stride")):
    try:
        launch.layouts(desc, 2, 40, 50, given)
        raise AssertionError(f"accepted {given}")
    except ValueError as e:
        assert words in str(e), e
for ptr, strides_, words in ((0, {"B": 0, "H": 68, "S": 64}, "H = 68"),
                             (8, {"B": 0, "H": 64, "S": 64}, "0x8")):
    try:
        launch.check_layout(desc, "v", ptr, strides_)
        raise AssertionError(f"accepted {ptr}, {strides_}")
    except ValueError as e:
        assert "'v'" in str(e) and "16 bytes" in str(e) and words in str(e), e
launch.check_layout(desc, "gate", 4, {"B": 0, "H": 66, "S": 2})


def rejected(change, words):
    bad = copy.deepcopy(desc)
    change(bad)
    try:
        launch.validate(bad)
    except launch.LaunchDescriptionError as e:
        assert words in str(e) and desc["kernel"] in str(e), (words, e)
        return
    raise AssertionError(f"accepted a description without {words}")


rejected(lambda d: d.update(version=1), "version 1")
rejected(lambda d: d["arguments"].append({"name": "x.B", "kind": "stride",
                                          "of": ["x"], "dim": "B"}), "'of'")
rejected(lambda d: d["arguments"].append({"name": "q.B", "kind": "stride",
                                          "of": "q", "dim": "B"}), "'of'")
rejected(lambda d: d["arguments"].append({"name": "q.S", "kind": "stride",
                                          "of": ["q"], "dim": "S"}), "'dim'")
rejected(lambda d: d["arguments"][0].pop("row_stride"), "'row_stride'")
rejected(lambda d: d["arguments"].append({"name": "N", "kind": "index"}),
         "'N'")
rejected(lambda d: d.pop("schema"), "schema None")
rejected(lambda d: d.pop("block"), "'block'")
rejected(lambda d: d.update(Hq=True), "'Hq'")
rejected(lambda d: d.update(dynamic_shared_memory="80K"),
         "'dynamic_shared_memory'")
rejected(lambda d: d.update(grid=[["Sq", 64], ["Hq", 1]]), "'grid'")
rejected(lambda d: d.update(grid=[["Sq", 0], ["Hq", 1], ["B", 1]]), "'grid'")
rejected(lambda d: d.update(grid=[["N", 64], ["Hq", 1], ["B", 1]]), "'grid'")
rejected(lambda d: d.update(block=[128, 0, 1]), "'block'")
rejected(lambda d: d["abi"].update(memref=["aligned"]), "'abi'")
rejected(lambda d: d["arguments"].append({"name": "x", "kind": "ptr"}),
         "'ptr'")
try:
    launch.validate([desc])
    raise AssertionError("a list is not a description")
except launch.LaunchDescriptionError as e:
    assert "JSON object" in str(e), e
# The launcher refuses such a description before touching the driver.
try:
    cuda.Backend(None).kernel("", dict(desc, version=0))
    raise AssertionError("the runner took a version-0 description")
except launch.LaunchDescriptionError:
    pass

# The sm_90a kernel's description: Q, K, V are TMA maps over (width, S,
# B x H), boxes one 128-byte swizzle span wide; one parameter each.
lowered = runner.compile_module(
    mlir.attention_function(cfg, "attn"),
    ["--gated-attention-to-ptx=chip=sm_90a kernel=wgmma"])
(hopper,) = ptx.launch_descriptions(lowered).values()
assert launch.uses_tensor_maps(hopper) and not launch.uses_tensor_maps(desc)
maps = {a["name"]: a for a in hopper["arguments"] if a["kind"] == "tensor_map"}
assert sorted(maps) == ["k", "q", "v"], maps
assert maps["q"]["box"] == [64, hopper["rows_per_block"], 1]
assert maps["k"]["box"] == [64, hopper["key_block"], 1]
assert launch.map_dims(hopper, maps["k"], b=3, sq=40, skv=50) == [64, 50, 6]
assert launch.map_dims(hopper, maps["q"], b=3, sq=40, skv=50) == [64, 40, 12]
assert launch.parameter_count(hopper) == 3 + 2 * 5 + 2 + 2 * 2
# Its Q, K and V are read through maps of the contiguous layout.
try:
    launch.layouts(hopper, 1, 40, 40, {"q": {"B": 0, "H": 128, "S": 256}})
    raise AssertionError("strided Q accepted for the sm_90a kernel")
except ValueError as e:
    assert "'q' must be [B, H, S, D]-contiguous" in str(e), e
# Warp specialization: a producer warpgroup beside the consumers, which own
# 64 rows each; cuda.compile_kernel passes the warps option through.
assert hopper["block"] == [384, 1, 1] and hopper["rows_per_block"] == 128
_, _, one = cuda.compile_kernel(cfg, chip="sm_90a", kernel="wgmma", warps=4)
assert one["block"] == [256, 1, 1] and one["rows_per_block"] == 64, one
for warps in (-1, 2.0, True, "4"):
    try:
        cuda.compile_kernel(cfg, chip="sm_90a", kernel="wgmma", warps=warps)
        raise AssertionError(f"compile_kernel took warps={warps!r}")
    except ValueError as e:
        assert "warps" in str(e), e
# A decode step's kernels with kernel=wgmma: the direct one is the sm_90a
# kernel, split-KV's split and merge kernels stay mma.sync's (SIMT for the
# merge), with grids of their own (a split CTA packs the G = 2 heads of a
# K/V head).
decode = cuda.compile_decode_kernels(cfg, chip="sm_90a", kernel="wgmma")
assert {layout: d["instructions"] for layout, (_, _, d) in decode.items()} \
    == {"dense": "wgmma", "dense-split": "mma.sync",
        "split-merge": "simt"}, decode
assert decode["dense"][2]["block"] == [384, 1, 1]
assert decode["dense-split"][2]["grid"] == [["splits", 1], ["Hq", 2],
                                           ["B", 1]], decode["dense-split"]
bad = copy.deepcopy(hopper)
bad["arguments"][0]["box"] = [64, 512, 1]
try:
    launch.validate(bad)
    raise AssertionError("accepted a TMA box of 512 rows")
except launch.LaunchDescriptionError as e:
    assert "'box'" in str(e), e
bad = copy.deepcopy(hopper)
bad["arguments"][1]["dims"] = ["D", "Skv", "B*H"]
try:
    launch.validate(bad)
    raise AssertionError("accepted an unknown symbol in a map's dims")
except launch.LaunchDescriptionError as e:
    assert "'dims'" in str(e), e
print("ok")
