#!/usr/bin/env python3
"""Write a reference file for `qwen3 verify` from Hugging Face transformers, for any model folder.

    python3 tools/scripts/make_reference.py MODEL_DIR OUT.json "The capital of France is" "Stolica Francji to"
    qwen3 verify MODEL_DIR OUT.json

The format is the one of tests/fixtures/README.md: per prompt position the top-10 [id, logit]
pairs and the logsumexp of a full forward in float32, then a greedy continuation with the KV
cache and each step's top-5, margin and logsumexp. Needs torch and transformers.
"""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def top(logits, k):
    values, ids = torch.topk(logits, k)
    return [[int(i), float(v)] for i, v in zip(ids, values)]


def case(model, tokenizer, name, text, new_tokens):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
        positions = [{"top": top(row, 10), "logsumexp": float(torch.logsumexp(row, 0)),
                      "mean": float(row.mean()), "l2": float(row.norm())} for row in logits]
        out = model(torch.tensor([ids]), use_cache=True)
        cache, last = out.past_key_values, out.logits[0, -1].float()
        greedy, steps = [], []
        first_margin = float(torch.topk(last, 2).values[0] - torch.topk(last, 2).values[1])
        for _ in range(new_tokens):
            token = int(torch.argmax(last))
            greedy.append(token)
            out = model(torch.tensor([[token]]), past_key_values=cache, use_cache=True)
            cache, last = out.past_key_values, out.logits[0, -1].float()
            best2 = torch.topk(last, 2).values
            steps.append({"top": top(last, 5), "margin": float(best2[0] - best2[1]),
                          "logsumexp": float(torch.logsumexp(last, 0))})
    return {"name": name, "text": text, "prompt_ids": ids, "positions": positions, "greedy_ids": greedy,
            "greedy_steps": steps, "greedy_first_margin": first_margin,
            "greedy_min_margin": min([first_margin] + [s["margin"] for s in steps[:-1]]),
            "greedy_text": tokenizer.decode(ids + greedy), "greedy_text_new": tokenizer.decode(greedy)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("out")
    parser.add_argument("prompts", nargs="+")
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, torch_dtype=torch.float32).eval()
    cases = [case(model, tokenizer, f"prompt{i}", p, args.new_tokens) for i, p in enumerate(args.prompts)]
    import transformers
    with open(args.out, "w") as f:
        json.dump({"model": args.model_dir, "meta": {"torch": torch.__version__, "transformers": transformers.__version__},
                   "cases": cases}, f)


if __name__ == "__main__":
    main()
