#!/usr/bin/env python3
"""Write a GGUF v3 file with random weights and the exact shape of a published Qwen3 / Qwen3.5 model.

    python3 tools/scripts/random_gguf.py --arch qwen3moe --outtype q4_0 --out qwen3-30b-a3b-random-q4_0.gguf
    python3 tools/scripts/random_gguf.py --arch qwen3 --outtype bf16 --out qwen3-0.6b-random-bf16.gguf
    python3 tools/scripts/random_gguf.py --arch qwen35 --outtype bf16 --out qwen3.5-0.8b-random-bf16.gguf

Needs numpy (Debian: python3-numpy).

Speed does not depend on weight values, so a random file of the real shape runs as fast as the
real checkpoint, in llama.cpp and in qwen3 alike, without downloading it. The defaults are
Qwen3-0.6B (--arch qwen3), Qwen3-30B-A3B (--arch qwen3moe), Qwen3.5-0.8B (--arch qwen35, the shape
of `qwen3 random-model --preset qwen3.5-0.8b`) and Qwen3.5-35B-A3B (--arch qwen35moe); --hidden,
--layers, --heads, ... override single dimensions to make small files for quick checks (the
Qwen3.5-2B shape: --arch qwen35 --hidden 2048 --ffn 6144).

Names, shapes, types and metadata keys follow llama.cpp's convert_hf_to_gguf.py (its
conversion/qwen.py) for the `qwen3`, `qwen3moe`, `qwen35` and `qwen35moe` architectures: norms,
1-D tensors, the DeltaNet convolution (ssm_conv1d) and the MoE router (ffn_gate_inp) stay F32,
experts are stacked 3-D tensors ffn_{gate,up,down}_exps, the tokenizer is the real Qwen3 one (gpt2;
pre-tokenizer qwen2, or qwen35 where its pattern matches combining marks). The one difference:
with --outtype q4_0 token_embd and output are Q4_0 too (as `llama-quantize --pure` makes them) where
llama-quantize's default would pick Q6_K for output.

Qwen3.5 (`qwen35`): every --full-attention-interval-th layer is gated attention (attn_q holds query
and gate, 2 x heads x head_dim rows; attn_k, attn_v, attn_output, attn_{q,k}_norm); the others are
Gated DeltaNet: attn_qkv (in_proj_qkv: q, k, v), attn_gate (in_proj_z), ssm_conv1d [kernel,
channels], ssm_dt.bias (dt_bias), ssm_a (the converter stores -exp(A_log): written negative here),
ssm_alpha (in_proj_a), ssm_beta (in_proj_b), ssm_norm, ssm_out (out_proj); each layer's second norm
is post_attention_norm. The converter's value transforms (norm gains stored as 1 + w, value heads
reordered from grouped to tiled when value heads > key heads) change values, not shapes or types,
and do not matter to random weights. llama.cpp's Gated DeltaNet takes the value head size from
ssm.state_size, so key and value heads share --linear-head-dim.

The container is written here from the format, without llama.cpp's gguf-py: header, typed
key/values, tensor infos (dims fastest first), then the data, every tensor aligned to 32 bytes.
Tensors are generated and written in chunks, so the 17 GB file needs little memory.
"""
import argparse
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np

ALIGN = 32
CHUNK = 64 << 20  # bytes of tensor data generated at a time

# ggml type: (id, weights per block, bytes per block); general.file_type for --outtype
GGML_TYPES = {"f32": (0, 1, 4), "bf16": (30, 1, 2), "q4_0": (2, 32, 18), "q8_0": (8, 32, 34)}
FILE_TYPE = {"f32": 0, "bf16": 32, "q4_0": 2, "q8_0": 7}

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)

# config.json of Qwen/Qwen3-0.6B, Qwen/Qwen3-30B-A3B, Qwen/Qwen3.5-0.8B and Qwen/Qwen3.5-35B-A3B
# (text_config); every dimension not named is 0
DIMS = ["hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "experts", "experts_used",
        "expert_ffn", "shared_ffn", "rotary_dim", "linear_key_heads", "linear_value_heads",
        "linear_head_dim", "conv_kernel", "full_attention_interval", "vocab"]
SHAPES = {
    "qwen3": dict(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, ffn=3072,
                  vocab=151936, tied=True),
    "qwen3moe": dict(hidden=2048, layers=48, heads=32, kv_heads=4, head_dim=128, ffn=6144,
                     experts=128, experts_used=8, expert_ffn=768, vocab=151936, tied=False),
    "qwen35": dict(hidden=1024, layers=24, heads=8, kv_heads=2, head_dim=256, rotary_dim=64,
                   ffn=3584, linear_key_heads=16, linear_value_heads=16, linear_head_dim=128,
                   conv_kernel=4, full_attention_interval=4, vocab=248320, tied=True),
    "qwen35moe": dict(hidden=2048, layers=40, heads=16, kv_heads=2, head_dim=256, rotary_dim=64,
                      experts=256, experts_used=8, expert_ffn=512, shared_ffn=512,
                      linear_key_heads=16, linear_value_heads=32, linear_head_dim=128,
                      conv_kernel=4, full_attention_interval=4, vocab=248320, tied=False),
}
NAMES = {"qwen3": "Qwen3-0.6B", "qwen3moe": "Qwen3-30B-A3B", "qwen35": "Qwen3.5-0.8B",
         "qwen35moe": "Qwen3.5-35B-A3B"}
HYBRID = ("qwen35", "qwen35moe")
MOE = ("qwen3moe", "qwen35moe")
# context_length, rope theta
CONTEXT = {"qwen3": 40960, "qwen3moe": 40960, "qwen35": 262144, "qwen35moe": 262144}
ROPE_THETA = {"qwen3": 1e6, "qwen3moe": 1e6, "qwen35": 1e7, "qwen35moe": 1e7}
RMS_EPS = 1e-6
MROPE_SECTIONS = [11, 11, 10, 0]  # Qwen3.5's interleaved M-RoPE; plain RoPE for text

# llama.cpp token types
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5


def recurrent(s, i):
    """Is layer i a Gated DeltaNet layer (qwen35: all but every full_attention_interval-th)?"""
    return s["full_attention_interval"] > 0 and (i + 1) % s["full_attention_interval"] != 0


def tensors(arch, s):
    """(name, dims in ggml order: fastest first, is_matrix) for every tensor, as the converter
    names them. PyTorch's (out_features, in_features) becomes ggml's [in, out]."""
    d, hd, ff, ffe, ne = s["hidden"], s["head_dim"], s["ffn"], s["expert_ffn"], s["experts"]
    q, kv = s["heads"] * hd, s["kv_heads"] * hd
    # Gated DeltaNet: key and value heads of linear_head_dim, q k v through one convolution
    dk, dv = s["linear_key_heads"] * s["linear_head_dim"], s["linear_value_heads"] * s["linear_head_dim"]
    nv = s["linear_value_heads"]
    out = [("token_embd.weight", [d, s["vocab"]], True)]
    for i in range(s["layers"]):
        b = f"blk.{i}."
        out.append((b + "attn_norm.weight", [d], False))
        if arch in HYBRID and recurrent(s, i):
            out += [(b + "attn_qkv.weight", [d, 2 * dk + dv], True),
                    (b + "attn_gate.weight", [d, dv], True),
                    (b + "ssm_conv1d.weight", [s["conv_kernel"], 2 * dk + dv], False),
                    (b + "ssm_dt.bias", [nv], False),
                    (b + "ssm_a", [nv], False),
                    (b + "ssm_beta.weight", [d, nv], True),
                    (b + "ssm_alpha.weight", [d, nv], True),
                    (b + "ssm_norm.weight", [s["linear_head_dim"]], False),
                    (b + "ssm_out.weight", [dv, d], True)]
        else:
            gated = 2 if arch in HYBRID else 1  # Qwen3.5's q_proj: query and output gate
            out += [(b + "attn_q.weight", [d, gated * q], True),
                    (b + "attn_k.weight", [d, kv], True),
                    (b + "attn_v.weight", [d, kv], True),
                    (b + "attn_output.weight", [q, d], True),
                    (b + "attn_q_norm.weight", [hd], False),
                    (b + "attn_k_norm.weight", [hd], False)]
        out.append((b + ("post_attention_norm.weight" if arch in HYBRID else "ffn_norm.weight"),
                    [d], False))
        if arch in MOE:
            # the router stays F32 in convert_hf_to_gguf.py and in llama-quantize
            out += [(b + "ffn_gate_inp.weight", [d, ne], False),
                    (b + "ffn_gate_exps.weight", [d, ffe, ne], True),
                    (b + "ffn_up_exps.weight", [d, ffe, ne], True),
                    (b + "ffn_down_exps.weight", [ffe, d, ne], True)]
            if arch == "qwen35moe":
                sf = s["shared_ffn"]
                out += [(b + "ffn_gate_inp_shexp.weight", [d], False),
                        (b + "ffn_gate_shexp.weight", [d, sf], True),
                        (b + "ffn_up_shexp.weight", [d, sf], True),
                        (b + "ffn_down_shexp.weight", [sf, d], True)]
        else:
            out += [(b + "ffn_gate.weight", [d, ff], True),
                    (b + "ffn_up.weight", [d, ff], True),
                    (b + "ffn_down.weight", [ff, d], True)]
    out.append(("output_norm.weight", [d], False))
    if not s["tied"]:
        out.append(("output.weight", [d, s["vocab"]], True))
    return out


def vocab(tok_dir, n_vocab, truncate=False):
    """tokens, token types, merges, chat template, pre-tokenizer and the ids of <|endoftext|>
    and <|im_end|> (None where truncated away), as the converter's get_vocab_base() and
    SpecialVocab derive them from tokenizer.json and tokenizer_config.json (or
    chat_template.jinja). truncate: keep ids below n_vocab only, and the merges among them (for
    test models whose vocab is the first n_vocab ids of the real tokenizer)."""
    tj = json.loads((tok_dir / "tokenizer.json").read_text(encoding="utf-8"))
    cfg = json.loads((tok_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = cfg.get("chat_template")
    if template is None and (tok_dir / "chat_template.jinja").exists():
        template = (tok_dir / "chat_template.jinja").read_text(encoding="utf-8")
    # Qwen3.5's pattern adds \p{M} (combining marks); llama.cpp names that pre-tokenizer qwen35
    pre = "qwen35" if "p{M}" in json.dumps(tj["pre_tokenizer"]) else "qwen2"
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj["added_tokens"]}
    by_id.update({i: a["content"] for i, a in added.items()})
    if truncate:
        by_id = {i: t for i, t in by_id.items() if i < n_vocab}
        added = {i: a for i, a in added.items() if i < n_vocab}
    if max(by_id) >= n_vocab:
        sys.exit(f"--vocab {n_vocab} is smaller than the tokenizer ({max(by_id) + 1} tokens)")

    def looks_special(t):  # does_token_look_special() for this vocabulary
        return t.startswith("<|") and t.endswith("|>")

    tokens, types = [], []
    for i in range(n_vocab):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(UNUSED)
        elif i in added:
            tokens.append(by_id[i])
            special = added[i]["special"] or looks_special(by_id[i])
            types.append(CONTROL if special else USER_DEFINED)
        else:
            tokens.append(by_id[i])
            types.append(NORMAL)
    # merges as "a b"; a space inside a part is written as U+0120 + 256, like SpecialVocab
    merges = [m if isinstance(m, str) else " ".join(p.replace(" ", chr(ord(" ") + 256)) for p in m)
              for m in tj["model"]["merges"]]
    if truncate:
        kept = set(by_id.values())
        merges = [m for m in merges
                  if all(p in kept for p in m.split(" ")) and m.replace(" ", "") in kept]
    ids = {by_id[i]: i for i in added}
    return (tokens, types, merges, template, pre, ids.get("<|endoftext|>"),
            ids.get("<|im_end|>"))


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
          U64: "Q", I64: "q", F64: "d"}


def kv_bytes(key, vtype, value, sub=None):
    out = gguf_str(key) + struct.pack("<I", vtype)
    if vtype == STR:
        return out + gguf_str(value)
    if vtype == ARR:
        out += struct.pack("<IQ", sub, len(value))
        if sub == STR:
            return out + b"".join(gguf_str(v) for v in value)
        return out + np.asarray(value, dtype="<" + SCALAR[sub]).tobytes()
    return out + struct.pack("<" + SCALAR[vtype], value)


def metadata(arch, s, outtype, name, tok):
    a = arch + "."
    kv = [("general.architecture", STR, arch),
          ("general.type", STR, "model"),
          ("general.name", STR, name),
          ("general.alignment", U32, ALIGN),
          (a + "block_count", U32, s["layers"]),
          (a + "context_length", U32, CONTEXT[arch]),
          (a + "embedding_length", U32, s["hidden"])]
    if s["ffn"]:
        kv.append((a + "feed_forward_length", U32, s["ffn"]))
    kv += [(a + "attention.head_count", U32, s["heads"]),
           (a + "attention.head_count_kv", U32, s["kv_heads"]),
           (a + "rope.freq_base", F32, ROPE_THETA[arch]),
           (a + "attention.layer_norm_rms_epsilon", F32, RMS_EPS)]
    if arch in MOE:
        kv += [(a + "expert_count", U32, s["experts"]),
               (a + "expert_used_count", U32, s["experts_used"]),
               (a + "expert_feed_forward_length", U32, s["expert_ffn"])]
    if arch == "qwen35moe":
        kv.append((a + "expert_shared_feed_forward_length", U32, s["shared_ffn"]))
    kv += [(a + "attention.key_length", U32, s["head_dim"]),
           (a + "attention.value_length", U32, s["head_dim"])]
    if arch in HYBRID:
        kv += [(a + "rope.dimension_sections", ARR, MROPE_SECTIONS, I32),
               (a + "ssm.conv_kernel", U32, s["conv_kernel"]),
               (a + "ssm.state_size", U32, s["linear_head_dim"]),
               (a + "ssm.group_count", U32, s["linear_key_heads"]),
               (a + "ssm.time_step_rank", U32, s["linear_value_heads"]),
               (a + "ssm.inner_size", U32, s["linear_value_heads"] * s["linear_head_dim"]),
               (a + "full_attention_interval", U32, s["full_attention_interval"]),
               (a + "rope.dimension_count", U32, s["rotary_dim"])]
    kv += [("general.file_type", U32, FILE_TYPE[outtype]),
           ("general.quantization_version", U32, 2)]
    return kv + tokenizer_kv(tok)


def tokenizer_kv(tok):
    """The tokenizer.* keys of vocab()'s result, as the converter writes them."""
    tokens, types, merges, template, pre, endoftext, im_end = tok
    kv = [("tokenizer.ggml.model", STR, "gpt2"),
          ("tokenizer.ggml.pre", STR, pre),
          ("tokenizer.ggml.tokens", ARR, tokens, STR),
          ("tokenizer.ggml.token_type", ARR, types, I32),
          ("tokenizer.ggml.merges", ARR, merges, STR)]
    kv += [(key, U32, i) for key, i in (("tokenizer.ggml.eos_token_id", im_end),
                                         ("tokenizer.ggml.padding_token_id", endoftext),
                                         ("tokenizer.ggml.bos_token_id", endoftext))
           if i is not None]
    kv.append(("tokenizer.ggml.add_bos_token", BOOL, False))
    if template is not None:
        kv.append(("tokenizer.chat_template", STR, template))
    return kv


def nbytes(dims, gtype):
    _, blk, size = GGML_TYPES[gtype]
    if dims[0] % blk:
        sys.exit(f"rows of {dims[0]} weights do not split into {gtype} blocks of {blk}")
    return int(np.prod(dims, dtype=np.int64)) // blk * size


def random_chunk(rng, n, gtype):
    """n bytes of small finite random weights of type gtype (n a multiple of the block size)."""
    m = n // 2 if gtype == "f32" else n  # f32 widens random bf16 values
    raw = rng.random_raw((m + 7) // 8).view(np.uint8)[:m]  # SFC64 raw draws: ~10x rng.bytes()
    if gtype in ("q4_0", "q8_0"):
        # each block: fp16 scale d, then 16 bytes of nibbles q (q4_0: w = (q - 8) d) or 32 int8
        # q (q8_0: w = q d); random q with these d give |w| <= 0.016 (q4_0), 0.026 (q8_0)
        blocks = raw.reshape(-1, GGML_TYPES[gtype][2])
        d = np.float16(0.002 if gtype == "q4_0" else 0.0002)
        blocks[:, 0:2] = np.frombuffer(d.tobytes(), dtype=np.uint8)
        return raw
    # bf16: random sign and mantissa, exponent 120 or 121, so |w| in [2^-7, 2^-5)
    h = raw.view(np.uint16)
    h &= 0x80FF
    h |= 0x3C00
    return h if gtype == "bf16" else (h.astype(np.uint32) << 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=SHAPES, default="qwen3")
    ap.add_argument("--outtype", choices=["q4_0", "q8_0", "bf16", "f32"], default="bf16",
                    help="type of every weight matrix; norms and the router stay F32")
    ap.add_argument("--out", type=Path, required=True)
    for k in DIMS:
        ap.add_argument("--" + k.replace("_", "-"), type=int)
    ap.add_argument("--tied", action=argparse.BooleanOptionalAction,
                    help="lm_head shares token_embd (default: qwen3, qwen35 yes; the MoE no)")
    repo = Path(__file__).resolve().parents[2]
    ap.add_argument("--tokenizer-dir", type=Path, default=repo / "tests/fixtures/models/qwen3-tiny",
                    help="folder with the real Qwen3 tokenizer.json and tokenizer_config.json")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    s = dict.fromkeys(DIMS, 0)
    s.update(SHAPES[args.arch])
    s.update({k: v for k, v in vars(args).items() if k in s and v is not None})
    if args.arch in MOE and not 0 < s["experts_used"] <= s["experts"]:
        sys.exit(f"{args.arch} needs 0 < --experts-used <= --experts")
    if args.arch in HYBRID:
        if s["linear_value_heads"] % s["linear_key_heads"]:
            sys.exit("--linear-value-heads must be a multiple of --linear-key-heads")
        if not 0 < s["rotary_dim"] <= s["head_dim"] or s["rotary_dim"] % 2:
            sys.exit("--rotary-dim must be even and at most --head-dim")
    name = NAMES[args.arch] + " shape, random weights"

    infos, offset = [], 0
    for tname, dims, matrix in tensors(args.arch, s):
        gtype = args.outtype if matrix else "f32"
        size = nbytes(dims, gtype)
        infos.append((tname, dims, gtype, offset, size))
        offset += -(-size // ALIGN) * ALIGN

    kv = metadata(args.arch, s, args.outtype, name, vocab(args.tokenizer_dir, s["vocab"]))
    head = [b"GGUF", struct.pack("<IQQ", 3, len(infos), len(kv))]
    head += [kv_bytes(*e) for e in kv]
    for tname, dims, gtype, off, _ in infos:
        head.append(gguf_str(tname) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims,
                                                  GGML_TYPES[gtype][0], off))
    head = b"".join(head)
    head += bytes(-len(head) % ALIGN)

    rng = np.random.SFC64(args.seed)
    t0 = time.time()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(head)
        for tname, dims, gtype, off, size in infos:
            assert f.tell() == len(head) + off
            if tname.endswith("_norm.weight"):
                f.write(np.ones(dims, dtype="<f4").tobytes())  # RMSNorm gains of 1
            elif tname.endswith(".ssm_a"):
                # -exp(A_log) < 0: each DeltaNet state decays, as in a trained model
                f.write((random_chunk(rng, size, gtype) | np.uint32(0x80000000)).tobytes())
            else:
                step = CHUNK - CHUNK % GGML_TYPES[gtype][2]
                for pos in range(0, size, step):
                    f.write(random_chunk(rng, min(step, size - pos), gtype))
            f.write(bytes(-size % ALIGN))
    total = len(head) + offset
    n_params = sum(int(np.prod(i[1], dtype=np.int64)) for i in infos)
    print(f"{args.out}: {args.arch} {args.outtype}, {len(infos)} tensors, {n_params / 1e9:.3f}B "
          f"weights, {total:,} bytes in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
