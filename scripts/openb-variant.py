#!/usr/bin/env python3
"""Writes an OpenB pod list that is *not* one of the shipped variants, to check a default on
traces it was not chosen on (docs/history/simulation.md, v6 "unseen variants").

Every row of the default list keeps its name and times (arrivals, departures); its shape
(cpu, memory, GPUs, GPU share, GPU model, QoS) is redrawn, seeded, from the default list's pods
of one kind, the kinds weighted so that the list has the asked mix:

  --gpushare F    fraction of GPU pods that share a GPU (gpu_milli < 1000)
  --cpu-only F    fraction of all pods that ask for no GPU
  --multigpu F    fraction of GPU pods asking for more than one GPU
  --gpuspec F     fraction of GPU pods that name GPU models (their model lists are drawn from
                  the shipped gpuspec10 list's)

Unset fractions keep the default list's. Usage:
  scripts/openb-variant.py --gpushare 0.8 --seed 7 > /tmp/openb/openb_pod_list_share80.csv
"""
import argparse
import csv
import random
import sys
from pathlib import Path

SHAPE = ["cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos"]


def kind(row):
    gpus, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    if gpus == 0 or milli == 0:
        return "cpu"
    if gpus == 1 and milli < 1000:
        return "share"
    return "multi" if gpus > 1 else "whole"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--openb-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/openb"))
    p.add_argument("--gpushare", type=float)
    p.add_argument("--cpu-only", type=float)
    p.add_argument("--multigpu", type=float)
    p.add_argument("--gpuspec", type=float)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    d = Path(a.openb_dir)
    rows = list(csv.DictReader(open(d / "openb_pod_list_default.csv")))
    specs = [r["gpu_spec"] for r in csv.DictReader(open(d / "openb_pod_list_gpuspec10.csv")) if r["gpu_spec"]]
    pools = {}
    for r in rows:
        pools.setdefault(kind(r), []).append({k: r[k] for k in SHAPE})
    n = {k: len(v) for k, v in pools.items()}
    total, gpu = len(rows), len(rows) - n.get("cpu", 0)
    cpu_only = a.cpu_only if a.cpu_only is not None else n["cpu"] / total
    share = a.gpushare if a.gpushare is not None else n["share"] / gpu
    multi = a.multigpu if a.multigpu is not None else n["multi"] / gpu
    whole = 1.0 - share - multi
    if not (0 <= cpu_only <= 1 and 0 <= share <= 1 and 0 <= multi <= 1 and whole >= 0):
        sys.exit("fractions out of range: cpu-only %.2f, share %.2f, multi %.2f" % (cpu_only, share, multi))
    weights = {"cpu": cpu_only, "share": (1 - cpu_only) * share,
               "multi": (1 - cpu_only) * multi, "whole": (1 - cpu_only) * whole}
    kinds = list(weights)
    out = csv.DictWriter(sys.stdout, fieldnames=list(rows[0].keys()), lineterminator="\n")
    out.writeheader()
    for r in rows:
        k = rng.choices(kinds, [weights[x] for x in kinds])[0]
        shape = dict(rng.choice(pools[k]))
        if k != "cpu":
            shape["gpu_spec"] = ""
            if a.gpuspec is not None and rng.random() < a.gpuspec:
                shape["gpu_spec"] = rng.choice(specs)
        out.writerow({**r, **shape})


if __name__ == "__main__":
    main()
