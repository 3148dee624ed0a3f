#!/usr/bin/env python3
"""Convert a Qwen3 or Qwen3-MoE safetensors model folder to a GGUF v3 file (F32 or BF16), with
llama.cpp's tensor names, metadata keys and tokenizer metadata, for the engine's GGUF tests.

    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3-tiny-untied out.gguf
    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3moe-tiny out.gguf --outtype bf16
    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3-tiny vocab.gguf --vocab-only

Needs numpy (Debian: python3-numpy). Written from the format and from what llama.cpp's
convert_hf_to_gguf.py (conversion/qwen.py, base.py) produces for Qwen3ForCausalLM and
Qwen3MoeForCausalLM: the weights keep their values and layout (no permutation of q/k for Qwen's
NeoX RoPE), an MoE layer's experts are stacked into ffn_{gate,up,down}_exps [E, rows, cols],
norms and the router (ffn_gate_inp) stay F32, a tied model has no output.weight. The tokenizer
keys come from random_gguf.py's vocab(), which follows the converter's get_vocab_base();
with a config vocab_size below the tokenizer's (the tiny test models keep the first ids of the
real tokenizer) the vocabulary is cut to those ids and the merges among them.
--vocab-only writes the metadata and no tensors, as llama.cpp's ggml-vocab-*.gguf files are.
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from random_gguf import ALIGN, F32, STR, U32, gguf_str, kv_bytes, tokenizer_kv, vocab  # noqa: E402

GGML = {"f32": 0, "bf16": 30}
FILE_TYPE = {"f32": 0, "bf16": 32}  # llama_ftype: ALL_F32, MOSTLY_BF16
ARCH = {"qwen3": "qwen3", "qwen3_moe": "qwen3moe"}

# HF name after "model.layers.N." -> llama.cpp's after "blk.N." (gguf-py's tensor_mapping.py)
LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
}
EXPERT = {"gate_proj.weight": "ffn_gate_exps.weight", "up_proj.weight": "ffn_up_exps.weight",
          "down_proj.weight": "ffn_down_exps.weight"}
TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
       "lm_head.weight": "output.weight"}


def read_safetensors(path):
    """{name: float32 array} of a single-file safetensors checkpoint (F32 or BF16)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        data = raw[8 + n + begin:8 + n + end]
        if info["dtype"] == "F32":
            a = np.frombuffer(data, dtype="<f4")
        elif info["dtype"] == "BF16":
            a = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            sys.exit(f"{name}: dtype {info['dtype']} is not F32 or BF16")
        out[name] = a.reshape(info["shape"])
    return out


def gguf_tensors(weights, n_layers, n_experts):
    """[(llama.cpp name, float32 array)] in the converter's order: per layer, then the rest."""
    out = {}
    experts = {}
    for name, a in weights.items():
        if name in TOP:
            out[TOP[name]] = a
            continue
        parts = name.split(".", 3)  # model, layers, N, rest
        if parts[:2] != ["model", "layers"]:
            sys.exit(f"{name}: no llama.cpp name for this tensor")
        blk, rest = f"blk.{parts[2]}.", parts[3]
        if rest in LAYER:
            out[blk + LAYER[rest]] = a
        elif rest.startswith("mlp.experts."):
            e, proj = rest[len("mlp.experts."):].split(".", 1)
            experts.setdefault(blk + EXPERT[proj], {})[int(e)] = a
        else:
            sys.exit(f"{name}: no llama.cpp name for this tensor")
    for name, by_expert in experts.items():
        if sorted(by_expert) != list(range(n_experts)):
            sys.exit(f"{name}: experts {sorted(by_expert)}, expected 0..{n_experts - 1}")
        out[name] = np.stack([by_expert[e] for e in range(n_experts)])
    order = ["token_embd.weight"]
    for i in range(n_layers):
        order += sorted(k for k in out if k.startswith(f"blk.{i}."))
    order += [k for k in ("output_norm.weight", "output.weight") if k in out]
    return [(k, out[k]) for k in order]


def ggml_type(name, a, outtype):
    # the converter keeps 1-D tensors and the MoE router in F32
    return "f32" if a.ndim == 1 or name.endswith("ffn_gate_inp.weight") else outtype


def tensor_bytes(a, gtype):
    if gtype == "f32":
        return a.astype("<f4").tobytes()
    bits = a.astype("<f4").view(np.uint32)  # round to nearest even, as torch's cast does
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path, help="folder with config.json, model.safetensors and the "
                    "tokenizer files")
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", choices=GGML, default="f32",
                    help="type of every matrix but the router; norms stay F32")
    ap.add_argument("--vocab-only", action="store_true", help="metadata only, no tensors")
    args = ap.parse_args()

    c = json.loads((args.model / "config.json").read_text())
    if c["model_type"] not in ARCH:
        sys.exit(f"model_type {c['model_type']} is not qwen3 or qwen3_moe")
    arch = ARCH[c["model_type"]]
    a = arch + "."
    n_vocab = c["vocab_size"]
    tok = vocab(args.model, n_vocab, truncate=True)
    kv = [("general.architecture", STR, arch),
          ("general.type", STR, "model"),
          ("general.name", STR, args.model.name),
          ("general.alignment", U32, ALIGN),
          (a + "block_count", U32, c["num_hidden_layers"]),
          (a + "context_length", U32, c["max_position_embeddings"]),
          (a + "embedding_length", U32, c["hidden_size"]),
          (a + "feed_forward_length", U32, c["intermediate_size"]),
          (a + "attention.head_count", U32, c["num_attention_heads"]),
          (a + "attention.head_count_kv", U32, c["num_key_value_heads"]),
          (a + "rope.freq_base", F32, c["rope_theta"]),
          (a + "attention.layer_norm_rms_epsilon", F32, c["rms_norm_eps"])]
    if arch == "qwen3moe":
        kv += [(a + "expert_count", U32, c["num_experts"]),
               (a + "expert_used_count", U32, c["num_experts_per_tok"]),
               (a + "expert_feed_forward_length", U32, c["moe_intermediate_size"])]
    kv += [(a + "attention.key_length", U32, c["head_dim"]),
           (a + "attention.value_length", U32, c["head_dim"]),
           ("general.file_type", U32, FILE_TYPE[args.outtype]),
           ("general.quantization_version", U32, 2)]
    kv += tokenizer_kv(tok)

    tensors = []
    if not args.vocab_only:
        weights = read_safetensors(args.model / "model.safetensors")
        if c.get("tie_word_embeddings"):
            weights.pop("lm_head.weight", None)  # the converter drops a tied model's copy
        tensors = gguf_tensors(weights, c["num_hidden_layers"], c.get("num_experts", 0))

    infos, blobs, offset = [], [], 0
    for name, arr in tensors:
        gtype = ggml_type(name, arr, args.outtype)
        blob = tensor_bytes(arr, gtype)
        dims = list(reversed(arr.shape))  # ggml lists the fastest-varying index first
        infos.append(gguf_str(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims,
                                                  GGML[gtype], offset))
        blobs.append(blob + bytes(-len(blob) % ALIGN))
        offset += len(blobs[-1])
    head = b"".join([b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv))] +
                    [kv_bytes(*e) for e in kv] + infos)
    head += bytes(-len(head) % ALIGN)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(head + b"".join(blobs))
    print(f"{args.out}: {arch} {args.outtype}, {len(tensors)} tensors, {len(head) + offset:,} bytes")


if __name__ == "__main__":
    main()
