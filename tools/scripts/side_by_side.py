#!/usr/bin/env python3
"""Side-by-side speed of qwen3 and an already built llama.cpp on the same model shape.

    tools/scripts/side_by_side.py --qwen3 build/qwen3 --model models/qwen3-0.6b-random \
        --llama-bench PATH/llama-bench --gguf qwen3-0.6b-random-bf16.gguf [--membw PATH/membw] \
        [--reps 5] [--threads 1,2] [--qwen3-args "--no-mmap"] [--llama-args "-lm none"]

Runs the two engines interleaved, one repetition of every test at a time (pp16, pp128, pp512,
tg128), so drift on a shared machine hits both alike, and prints the median tokens/s of each with
the ratio. With --membw (../shared/tools/membw.c built with -fopenmp) it also measures the read
bandwidth in the same run (on huge pages with --membw-huge, the bound for --no-mmap) and prints
decode as a fraction of it. Builds nothing.
"""
import argparse
import json
import re
import statistics
import subprocess


def run(cmd, env=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def ours(args, threads):
    out = run([args.qwen3, "bench", args.model, "-p", "16,128,512", "-n", "128", "-r", "1", "-t", str(threads),
               "--json"] + args.qwen3_args.split())
    report = json.loads(out)
    return {t["test"]: t["tok_s_median"] for t in report["tests"]}, report["gb_per_token"], report["peak_rss_mb"]


def llama(args, threads):
    out = run([args.llama_bench, "-m", args.gguf, "-p", "16,128,512", "-n", "128", "-r", "1", "-t", str(threads),
               "-o", "json"] + args.llama_args.split())
    return {("pp%d" % t["n_prompt"] if t["n_gen"] == 0 else "tg%d" % t["n_gen"]): t["avg_ts"] for t in json.loads(out)}


def membw(path, threads, huge):
    import os
    out = run([path, "1", "5", "1" if huge else "0"], env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    return float(re.search(r"^read\s.*median\s+([\d.]+) GB/s", out, re.M).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--qwen3", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--llama-bench", required=True)
    p.add_argument("--gguf", required=True)
    p.add_argument("--membw")
    p.add_argument("--membw-huge", action="store_true", help="membw on huge pages (the fair bound for --no-mmap)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--qwen3-args", default="")
    p.add_argument("--llama-args", default="")
    args = p.parse_args()
    for threads in [int(t) for t in args.threads.split(",")]:
        a, b, bw = {}, {}, []
        for _ in range(args.reps):
            if args.membw:
                bw.append(membw(args.membw, threads, args.membw_huge))
            r, gb_per_token, rss = ours(args, threads)
            for k, v in r.items():
                a.setdefault(k, []).append(v)
            for k, v in llama(args, threads).items():
                b.setdefault(k, []).append(v)
        print(f"\n{threads} thread(s), medians of {args.reps} interleaved runs; qwen3 peak RSS {rss:.0f} MB")
        if bw:
            print(f"read bandwidth (membw{', huge pages' if args.membw_huge else ''}): {statistics.median(bw):.1f} GB/s")
        print(f"{'test':8} {'qwen3 tok/s':>12} {'llama.cpp':>10} {'ratio':>7}")
        for k in a:
            ma, mb = statistics.median(a[k]), statistics.median(b.get(k, [float('nan')]))
            line = f"{k:8} {ma:12.2f} {mb:10.2f} {ma / mb:7.2f}"
            if k.startswith("tg") and bw:
                line += f"   qwen3 {ma * gb_per_token:.1f} GB/s = {100 * ma * gb_per_token / statistics.median(bw):.0f}% of membw"
            print(line)


if __name__ == "__main__":
    main()
