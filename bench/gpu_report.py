"""The README's GPU table and the plot, regenerated from the device check's CSVs.

    .venv/bin/python bench/gpu_report.py bench/results/gpu-DATE-GPU.csv \\
        [bench/results/gpu-DATE-GPU-wgmma.csv] --readme bench/README.md \\
        --png bench/results/gpu-DATE-GPU.png

Each CSV is one `bench/gpu_attention.py run` (one kernel: its `kernel`
column, mma-sync where a CSV predates it). The table, between the
README's `<!-- gpu-table:begin -->` and `<!-- gpu-table:end -->` lines,
has one row per shape: TFLOP/s of each kernel with and without its gate,
of torch SDPA followed by `* sigmoid(g)` and of SDPA alone (the baselines
of the first CSV), and the best fused kernel's speedup over SDPA + gate.
The plot shows the same figures at each shape. Only measured numbers
appear: a kernel without a CSV has no column.
"""

import argparse
import csv
import os
import sys

BEGIN, END = "<!-- gpu-table:begin -->", "<!-- gpu-table:end -->"
KERNEL_NAMES = {"mma-sync": "mma.sync", "wgmma": "wgmma"}


def read(paths):
    """{shape: {"baseline": row, kernel: row}}, kernels in first-seen order,
    the GPU and date of the rows."""
    shapes, kernels, gpus, dates = {}, [], set(), set()
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                kernel = row.get("kernel", "mma-sync")
                if kernel not in kernels:
                    kernels.append(kernel)
                key = (int(row["d"]), int(row["hq"]), int(row["hkv"]),
                       int(row["causal"]), int(row["s"]))
                entry = shapes.setdefault(key, {})
                entry[kernel] = row
                entry.setdefault("baseline", row)
                gpus.add(row["gpu"])
                dates.add(row["date"])
    if not shapes:
        raise ValueError("no rows in " + ", ".join(paths))
    return shapes, kernels, sorted(gpus), sorted(dates)


def shape_label(key):
    d, hq, hkv, causal, s = key
    heads = "" if hq == hkv else f", GQA {hq}/{hkv}"
    return f"{d}{heads}", "yes" if causal else "no", str(s)


def table(shapes, kernels):
    head = ["D", "causal", "S"]
    for k in kernels:
        name = KERNEL_NAMES.get(k, k)
        head += [f"{name} fused", f"{name} no gate"]
    head += ["torch SDPA + `*sigmoid(g)`", "torch SDPA", "best fused / SDPA+gate"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in sorted(shapes, key=lambda k: (k[4] != 16384, k)):
        entry = shapes[key]
        cells = list(shape_label(key))
        fused = []
        for k in kernels:
            row = entry.get(k)
            if row:
                cells += [row["fused_tflops"], row["fused_nogate_tflops"]]
                fused.append(float(row["fused_tflops"]))
            else:
                cells += ["–", "–"]
        base = entry["baseline"]
        cells += [base["sdpa_then_gate_tflops"], base["sdpa_tflops"]]
        ratio = max(fused) / float(base["sdpa_then_gate_tflops"])
        cells.append(f"{ratio:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def update_readme(path, text):
    with open(path) as f:
        content = f.read()
    if BEGIN not in content or END not in content:
        raise ValueError(f"{path}: no {BEGIN} ... {END} block")
    start = content.index(BEGIN) + len(BEGIN)
    end = content.index(END)
    new = content[:start] + "\n" + text + "\n" + content[end:]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)


def plot(shapes, kernels, gpus, dates, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(shapes, key=lambda k: (k[4] != 16384, k))
    series = [(f"{KERNEL_NAMES.get(k, k)} fused", k, "fused_tflops")
              for k in kernels]
    series += [("torch SDPA + gate", "baseline", "sdpa_then_gate_tflops"),
               ("torch SDPA", "baseline", "sdpa_tflops")]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, len(keys) * 0.9), 4.5))
    for i, (label, source, column) in enumerate(series):
        xs, ys = [], []
        for x, key in enumerate(keys):
            row = shapes[key].get(source)
            if row:
                xs.append(x + (i - (len(series) - 1) / 2) * width)
                ys.append(float(row[column]))
        ax.bar(xs, ys, width, label=label)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(
        [f"D{d}" + (f"\nGQA {hq}/{hkv}" if hq != hkv else "")
         + ("\ncausal" if causal else "") + f"\nS={seq}"
         for d, hq, hkv, causal, seq in keys], fontsize=7)
    ax.set_ylabel("TFLOP/s (bf16 forward, B·S = 16k tokens)")
    ax.set_title(f"Gated attention on {', '.join(gpus)} ({', '.join(dates)})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+", help="device-check CSVs of one run")
    p.add_argument("--readme", help="rewrite the table block of this file")
    p.add_argument("--png", help="write the plot here")
    args = p.parse_args(argv)
    try:
        shapes, kernels, gpus, dates = read(args.csv)
        text = table(shapes, kernels)
        if args.readme:
            update_readme(args.readme, text)
        else:
            print(text)
        if args.png:
            plot(shapes, kernels, gpus, dates, args.png)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
