#!/usr/bin/env python3
"""Convert a Qwen3, Qwen3-MoE, Qwen3.5 or Qwen3.5-MoE safetensors model folder to a GGUF v3 file
(F32 or BF16), with llama.cpp's tensor names, metadata keys and tokenizer metadata, for the
engine's GGUF tests.

    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3-tiny-untied out.gguf
    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3moe-tiny out.gguf --outtype bf16
    python3 tools/scripts/safetensors_to_gguf.py tests/fixtures/models/qwen3-tiny vocab.gguf --vocab-only

Needs numpy (Debian: python3-numpy). Written from the format and from what llama.cpp's
convert_hf_to_gguf.py (conversion/qwen.py, base.py) produces for Qwen3ForCausalLM and
Qwen3MoeForCausalLM: the weights keep their values and layout (no permutation of q/k for Qwen's
NeoX RoPE), an MoE layer's experts are stacked into ffn_{gate,up,down}_exps [E, rows, cols],
norms and the router (ffn_gate_inp) stay F32, a tied model has no output.weight. For Qwen3.5
(Qwen3NextModel and _LinearAttentionVReorderBase in conversion/qwen.py) the text model only (no
vision tower, no MTP head), with the converter's value changes: zero-centred norm gains stored as
1 + w (computed here in float32, exactly; the converter adds in the checkpoint's dtype), A_log
stored as -exp(A_log), conv1d squeezed to [C, K], packed experts split into gate and up, and with
more value heads than key heads the value heads reordered from grouped to tiled. The tokenizer
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
from random_gguf import ALIGN, ARR, F32, I32, STR, U32, gguf_str, kv_bytes, tokenizer_kv, vocab  # noqa: E402,E501

GGML = {"f32": 0, "bf16": 30}
FILE_TYPE = {"f32": 0, "bf16": 32}  # llama_ftype: ALL_F32, MOSTLY_BF16
ARCH = {"qwen3": "qwen3", "qwen3_moe": "qwen3moe", "qwen3_5": "qwen35", "qwen3_5_moe": "qwen35moe"}
HYBRID = ("qwen35", "qwen35moe")

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
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
    "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
    "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight",
    "linear_attn.in_proj_qkv.weight": "attn_qkv.weight",
    "linear_attn.in_proj_z.weight": "attn_gate.weight",
    "linear_attn.in_proj_b.weight": "ssm_beta.weight",
    "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
    "linear_attn.conv1d.weight": "ssm_conv1d.weight",
    "linear_attn.A_log": "ssm_a",
    "linear_attn.dt_bias": "ssm_dt.bias",
    "linear_attn.norm.weight": "ssm_norm.weight",
    "linear_attn.out_proj.weight": "ssm_out.weight",
}
EXPERT = {"gate_proj.weight": "ffn_gate_exps.weight", "up_proj.weight": "ffn_up_exps.weight",
          "down_proj.weight": "ffn_down_exps.weight"}
TOP = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}


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


def untile_value_heads(a, axis, first, nk, nv, head):
    """The converter's reorder of value heads from grouped (g r + i) to tiled (i nk + g) along
    `axis`, from index `first` on (_LinearAttentionVReorderBase._reorder_v_heads)."""
    a = np.moveaxis(a, axis, 0)
    v = a[first:first + nv * head]
    v = v.reshape(nk, nv // nk, head, *v.shape[1:]).swapaxes(0, 1).reshape(v.shape)
    return np.moveaxis(np.concatenate([a[:first], v]), 0, axis)


def qwen35_values(rest, a, t):
    """The converter's value changes for a Qwen3.5 layer tensor named `rest` (text_config t)."""
    if rest.endswith("norm.weight") and not rest.endswith("linear_attn.norm.weight"):
        a = a + np.float32(1)  # zero-centred gain stored as 1 + w
    if rest.endswith("A_log"):
        a = -np.exp(a)
    if rest.endswith("conv1d.weight"):
        a = a.squeeze()
    if rest == "mlp.shared_expert_gate.weight":
        a = a.squeeze()
    nk, nv = t["linear_num_key_heads"], t["linear_num_value_heads"]
    if nk != nv and rest.startswith("linear_attn."):
        qk, dv = 2 * nk * t["linear_key_head_dim"], t["linear_value_head_dim"]
        where = {"in_proj_qkv.weight": (0, qk, dv), "conv1d.weight": (0, qk, dv),
                 "in_proj_z.weight": (0, 0, dv), "in_proj_a.weight": (0, 0, 1),
                 "in_proj_b.weight": (0, 0, 1), "A_log": (0, 0, 1), "dt_bias": (0, 0, 1),
                 "out_proj.weight": (1, 0, dv)}.get(rest[len("linear_attn."):])
        if where:
            a = untile_value_heads(a, where[0], where[1], nk, nv, where[2])
    return a


def gguf_tensors(weights, prefix, n_layers, n_experts, t, hybrid):
    """[(llama.cpp name, float32 array)] in the converter's order: per layer, then the rest."""
    out = {}
    experts = {}
    for name, a in weights.items():
        if name == "lm_head.weight":
            out["output.weight"] = a
            continue
        if name.startswith(("model.visual.", "mtp.")):
            continue  # the text model only
        if not name.startswith(prefix):
            sys.exit(f"{name}: no llama.cpp name for this tensor")
        local = name[len(prefix):]
        if local in TOP:
            out[TOP[local]] = a + np.float32(1) if hybrid and local == "norm.weight" else a
            continue
        parts = local.split(".", 2)  # layers, N, rest
        if parts[0] != "layers":
            sys.exit(f"{name}: no llama.cpp name for this tensor")
        blk, rest = f"blk.{parts[1]}.", parts[2]
        if hybrid:
            a = qwen35_values(rest, a, t)
        if rest == "post_attention_layernorm.weight":
            out[blk + ("post_attention_norm.weight" if hybrid else "ffn_norm.weight")] = a
        elif rest in LAYER:
            out[blk + LAYER[rest]] = a
        elif rest == "mlp.experts.gate_up_proj":  # packed [E, 2I, D]: split as the converter does
            half = a.shape[1] // 2
            out[blk + "ffn_gate_exps.weight"], out[blk + "ffn_up_exps.weight"] = a[:, :half], a[:, half:]
        elif rest == "mlp.experts.down_proj":
            out[blk + "ffn_down_exps.weight"] = a
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
    # the converter keeps 1-D tensors, the MoE router and the DeltaNet convolution in F32
    keep = ("ffn_gate_inp.weight", "ssm_conv1d.weight")
    return "f32" if a.ndim == 1 or name.endswith(keep) else outtype


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

    top = json.loads((args.model / "config.json").read_text())
    if top["model_type"] not in ARCH:
        sys.exit(f"model_type {top['model_type']} is not one of {', '.join(ARCH)}")
    arch = ARCH[top["model_type"]]
    hybrid = arch in HYBRID
    c = top.get("text_config", top)  # Qwen3.5: the text model's fields
    rope = c.get("rope_parameters", c)
    a = arch + "."
    n_vocab = c["vocab_size"]
    tok = vocab(args.model, n_vocab, truncate=True)
    kv = [("general.architecture", STR, arch),
          ("general.type", STR, "model"),
          ("general.name", STR, args.model.name),
          ("general.alignment", U32, ALIGN),
          (a + "block_count", U32, c["num_hidden_layers"]),
          (a + "context_length", U32, c["max_position_embeddings"]),
          (a + "embedding_length", U32, c["hidden_size"])]
    if c.get("intermediate_size"):
        kv.append((a + "feed_forward_length", U32, c["intermediate_size"]))
    kv += [(a + "attention.head_count", U32, c["num_attention_heads"]),
           (a + "attention.head_count_kv", U32, c["num_key_value_heads"]),
           (a + "rope.freq_base", F32, rope["rope_theta"]),
           (a + "attention.layer_norm_rms_epsilon", F32, c["rms_norm_eps"])]
    if "num_experts" in c:
        kv += [(a + "expert_count", U32, c["num_experts"]),
               (a + "expert_used_count", U32, c["num_experts_per_tok"]),
               (a + "expert_feed_forward_length", U32, c["moe_intermediate_size"])]
    if c.get("shared_expert_intermediate_size"):
        kv.append((a + "expert_shared_feed_forward_length", U32,
                   c["shared_expert_intermediate_size"]))
    kv += [(a + "attention.key_length", U32, c["head_dim"]),
           (a + "attention.value_length", U32, c["head_dim"])]
    if hybrid:
        sections = (rope.get("mrope_section", [11, 11, 10]) + [0, 0, 0, 0])[:4]
        kv += [(a + "rope.dimension_sections", ARR, sections, I32),
               (a + "ssm.conv_kernel", U32, c["linear_conv_kernel_dim"]),
               (a + "ssm.state_size", U32, c["linear_key_head_dim"]),
               (a + "ssm.group_count", U32, c["linear_num_key_heads"]),
               (a + "ssm.time_step_rank", U32, c["linear_num_value_heads"]),
               (a + "ssm.inner_size", U32, c["linear_num_value_heads"] * c["linear_value_head_dim"]),
               (a + "full_attention_interval", U32, c.get("full_attention_interval", 4)),
               (a + "rope.dimension_count", U32,
                int(c["head_dim"] * rope.get("partial_rotary_factor", 0.25)))]
    kv += [("general.file_type", U32, FILE_TYPE[args.outtype]),
           ("general.quantization_version", U32, 2)]
    kv += tokenizer_kv(tok)

    tensors = []
    if not args.vocab_only:
        weights = read_safetensors(args.model / "model.safetensors")
        if top.get("tie_word_embeddings", c.get("tie_word_embeddings")):
            weights.pop("lm_head.weight", None)  # the converter drops a tied model's copy
        prefix = "model.language_model." if hybrid else "model."
        tensors = gguf_tensors(weights, prefix, c["num_hidden_layers"], c.get("num_experts", 0), c,
                               hybrid)

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
