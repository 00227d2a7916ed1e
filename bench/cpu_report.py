"""The CPU benchmark's plot: GFLOP/s vs S of every implementation, from the
CSVs bench/cpu_attention.py wrote on one date (one panel per table).

    .venv/bin/python bench/cpu_report.py [--date YYYY-MM-DD]
"""

import argparse
import csv
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PANELS = [
    ("throughput", "B1 H8 D128 f32, non-causal",
     [("tiled_gflops", "gated-attention"), ("torch_gflops", "torch SDPA + gate"),
      ("iree_gflops", "IREE (llvm-cpu)"), ("numpy_gflops", "numpy")]),
    ("qwen3next", "Qwen3-Next Hq16 Hkv2 D256 f32, causal",
     [("tiled_gflops", "gated-attention"), ("torch_gflops", "torch SDPA + gate"),
      ("iree_gflops", "IREE (llvm-cpu)"), ("numpy_gflops", "numpy")]),
    ("qwen3next-bf16", "Qwen3-Next Hq16 Hkv2 D256 bf16, causal",
     [("ours_gflops", "gated-attention (torch op)"),
      ("torch_gflops", "torch SDPA + gate"), ("iree_gflops", "IREE (llvm-cpu)")]),
]


def read(path):
    with open(path) as f:
        machine = f.readline().lstrip("# ").strip()
        return machine, list(csv.DictReader(f))


def plot(results, date):
    """Writes cpu-<date>.png beside the CSVs; returns its path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(name, title, series, read(path))
              for name, title, series in PANELS
              for path in [os.path.join(results, f"cpu-{name}-{date}.csv")]
              if os.path.exists(path)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    axes = axes if len(panels) > 1 else [axes]
    for ax, (name, title, series, (machine, rows)) in zip(axes, panels):
        for column, label in series:
            points = [(int(r["S"]), float(r[column])) for r in rows
                      if r.get(column)]
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("S")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Gated attention on the CPU: {machine} ({date})",
                 fontsize=10)
    fig.tight_layout()
    path = os.path.join(results, f"cpu-{date}.png")
    fig.savefig(path + ".tmp.png", dpi=100)
    os.replace(path + ".tmp.png", path)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default=os.path.join(HERE, "results"))
    p.add_argument("--date", help="default: the latest with a throughput CSV")
    args = p.parse_args()
    date = args.date or sorted(
        os.path.basename(f)[len("cpu-throughput-"):-len(".csv")]
        for f in glob.glob(os.path.join(args.results,
                                        "cpu-throughput-*.csv")))[-1]
    print(plot(args.results, date))


if __name__ == "__main__":
    main()
