#!/usr/bin/env python3
"""Side-by-side speed of qwen3 and an already built llama.cpp on the same model shape.

    tools/scripts/side_by_side.py --qwen3 build/qwen3 --model models/qwen3-0.6b-random \
        --llama-bench PATH/llama-bench --gguf qwen3-0.6b-random-bf16.gguf [--membw PATH/membw] \
        [--reps 5] [--threads 1,2] [--qwen3-args "--no-mmap"] [--llama-args "-lm none"] [--keep-cache]
        [--settle-each] [--tests "-p 16,128,512 -n 128"] [--depths 0,4096,16384]

Runs the two engines interleaved, one repetition of every test at a time (pp16, pp128, pp512,
tg128; with --depths each again after that many tokens of context, `qwen3 bench -d` against
`llama-bench -d`, named "pp512 @ d4096"), so drift on a shared machine hits both alike, and prints
the median tokens/s of each with the ratio, and decode's GB/s as a share of qwen3 bench's plain
read of the same weights (its `read GB/s` and `% read`: the same memory, just before the decode
run). With --membw (../shared/tools/membw.c built with -fopenmp) it also measures the read
bandwidth in the same run, on 4 KiB and on 2 MiB pages, and prints decode as a fraction of each
(weights mapped in 2 MiB pages, or read into huge pages with --no-mmap, answer to the second).

First it drops both engines' weight files from the page cache and reads them back, so both map
the same cache state: as a cold read leaves it, in 2 MiB folios where the kernel and file system
do that (a file written in small pieces stays in 4 KiB pages until then: see
drop_from_page_cache in include/qwen3/model.h). --keep-cache skips that. --settle-each does it
before every run of either engine instead: for models too large for the page cache to hold both
files (Qwen3-30B-A3B in 4 bits: 17 GB each on a 24 GB machine), each run then starts with its own
file wholly in memory. Builds nothing.
"""
import argparse
import glob
import json
import mmap
import os
import re
import statistics
import subprocess
import sys


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)}\nexited with {r.returncode}:\n{r.stderr[-3000:]}")
    return r.stdout


def ours(args, threads, depth):
    out = run([args.qwen3, "bench", args.model] + args.tests.split() +
              ["-r", "1", "-t", str(threads), "-d", str(depth), "--json"] + args.qwen3_args.split())
    report = json.loads(out)
    tests = report["tests"]
    read = {t["test"]: (t["read_gb_s"], t["read_share"]) for t in tests if t["read_gb_s"] > 0}
    return ({t["test"]: t["tok_s_median"] for t in tests}, report["gb_per_token"], report["peak_rss_mb"],
            tests[0]["huge_page_share"], read)


def llama(args, threads, depth):
    out = run([args.llama_bench, "-m", args.gguf] + args.tests.split() +
              ["-r", "1", "-t", str(threads), "-o", "json"] + (["-d", str(depth)] if depth else []) +
              args.llama_args.split())
    # named as qwen3 bench names its tests: "pp512", "tg128 @ d4096"
    return {("pp%d" % t["n_prompt"] if t["n_gen"] == 0 else "tg%d" % t["n_gen"]) +
            (" @ d%d" % t["n_depth"] if t.get("n_depth") else ""): t["avg_ts"] for t in json.loads(out)}


def settle(path):
    """Drops the file from the page cache and reads it back through a map that asks for huge
    folios, as a cold start of qwen3 does (read() ramps its readahead up and leaves the first
    part of a file in smaller folios)."""
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            m.madvise(mmap.MADV_HUGEPAGE)
            for offset in range(0, len(m), 4096):
                m[offset]


def membw(path, threads, huge):
    out = run([path, "1", "5", "1" if huge else "0"], env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    return float(re.search(r"^read\s.*median\s+([\d.]+) GB/s", out, re.M).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--qwen3", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--llama-bench", required=True)
    p.add_argument("--gguf", required=True)
    p.add_argument("--membw")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--qwen3-args", default="")
    p.add_argument("--llama-args", default="")
    p.add_argument("--keep-cache", action="store_true", help="measure the page cache as it is")
    p.add_argument("--settle-each", action="store_true", help="read each engine's file back before each of its runs")
    p.add_argument("--tests", default="-p 16,128,512 -n 128", help="the -p / -n lists both engines run")
    p.add_argument("--depths", default="0",
                   help="tokens of context before each test (qwen3 bench -d, llama-bench -d), a list: each "
                        "depth's tests run in turn within a repetition")
    args = p.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    ours_files = glob.glob(os.path.join(args.model, "*.safetensors"))
    if not args.keep_cache and not args.settle_each:
        for path in ours_files + [args.gguf]:
            settle(path)
    for threads in [int(t) for t in args.threads.split(",")]:
        a, b, bw, bw_huge, own = {}, {}, [], [], {}
        for _ in range(args.reps):
            if args.membw:
                bw.append(membw(args.membw, threads, False))
                bw_huge.append(membw(args.membw, threads, True))
            for depth in depths:
                if args.settle_each:
                    for path in ours_files:
                        settle(path)
                r, gb_per_token, rss, huge, read = ours(args, threads, depth)
                for k, v in read.items():
                    own.setdefault(k, []).append(v)
                for k, v in r.items():
                    a.setdefault(k, []).append(v)
                if args.settle_each:
                    settle(args.gguf)
                for k, v in llama(args, threads, depth).items():
                    b.setdefault(k, []).append(v)
        pages = "read into memory" if huge < 0 else f"{100 * huge:.0f}% mapped in 2 MiB pages"
        print(f"\n{threads} thread(s), medians of {args.reps} interleaved runs; "
              f"qwen3 peak RSS {rss:.0f} MB, weights {pages}")
        if bw:
            print(f"read bandwidth (membw): {statistics.median(bw):.1f} GB/s on 4 KiB pages, "
                  f"{statistics.median(bw_huge):.1f} on 2 MiB pages")
        width = max(8, *(len(k) for k in a))
        print(f"{'test':{width}} {'qwen3 tok/s':>12} {'llama.cpp':>10} {'ratio':>7}")
        for k in a:
            ma, mb = statistics.median(a[k]), statistics.median(b.get(k, [float('nan')]))
            line = f"{k:{width}} {ma:12.2f} {mb:10.2f} {ma / mb:7.2f}"
            if k in own:
                gbs = ma * gb_per_token
                line += (f"   qwen3 {gbs:.1f} GB/s; each run {100 * statistics.median(s for _, s in own[k]):.0f}% "
                         f"of its plain read of the weights just before (median; reads "
                         f"{statistics.median(r for r, _ in own[k]):.1f} GB/s)")
                if bw:
                    line += (f", {100 * gbs / statistics.median(bw):.0f}% / "
                             f"{100 * gbs / statistics.median(bw_huge):.0f}% of membw (4 KiB / 2 MiB pages)")
            print(line)


if __name__ == "__main__":
    main()
