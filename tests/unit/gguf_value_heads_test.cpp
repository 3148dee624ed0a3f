// Qwen3.5's value heads in GGUF files: the converter's tiled order, undone, on every tensor kind.
#include "model/gguf_value_heads.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace qwen3 {
namespace {

// The converter's reorder (_LinearAttentionVReorderBase._reorder_v_heads), written from its
// definition: head g r + i of Hugging Face's grouped order goes to position i nk + g.
std::vector<float> tile(const std::vector<float>& grouped, int nk, int nv, int block) {
  const int r = nv / nk;
  std::vector<float> tiled(grouped.size());
  for (int g = 0; g < nk; ++g)
    for (int i = 0; i < r; ++i)
      for (int e = 0; e < block; ++e)
        tiled[size_t((i * nk + g) * block + e)] = grouped[size_t((g * r + i) * block + e)];
  return tiled;
}

ModelConfig hybrid(int nk, int nv, int dk, int dv) {
  ModelConfig c;
  c.linear_num_key_heads = nk;
  c.linear_num_value_heads = nv;
  c.linear_key_head_dim = dk;
  c.linear_value_head_dim = dv;
  return c;
}

TEST(GgufValueHeads, UntilingUndoesTheConvertersOrder) {
  for (const auto [nk, nv, block] : {std::tuple{2, 4, 3}, {2, 6, 1}, {3, 6, 2}, {4, 4, 5}}) {
    std::vector<float> grouped(size_t(nv * block));
    std::iota(grouped.begin(), grouped.end(), 0.0f);
    std::vector<float> x = tile(grouped, nk, nv, block);
    untile_value_heads(x.data(), HeadOrder{1, int64_t(x.size()), 0, block}, nk, nv);
    EXPECT_EQ(x, grouped) << nk << " key heads, " << nv << " value heads of " << block;
  }
}

TEST(GgufValueHeads, OnlyTheValuePartOfEachTensorMoves) {
  const ModelConfig c = hybrid(2, 4, 3, 5);  // q and k: 2 x 2 x 3 = 12 channels, v: 4 x 5
  const std::string p = "model.language_model.layers.0.linear_attn.";
  const int64_t D = 7, C = 12 + 20, K = 4;
  // in_proj_qkv [C, D]: the rows from 12 on, five per head
  auto qkv = value_heads(c, p + "in_proj_qkv.weight", C, D);
  ASSERT_TRUE(qkv);
  EXPECT_EQ(qkv->first, 12 * D);
  EXPECT_EQ(qkv->block, 5 * D);
  // conv1d [C, 1, K] seen as [C, K]: the same channels, K taps each
  auto conv = value_heads(c, p + "conv1d.weight", C, K);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->first, 12 * K);
  EXPECT_EQ(conv->block, 5 * K);
  // out_proj [D, nv dv]: columns, in every row
  auto out = value_heads(c, p + "out_proj.weight", D, 20);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->rows, D);
  EXPECT_EQ(out->block, 5);
  // per-head scalars and rows
  for (const char* name : {"A_log", "dt_bias", "in_proj_a.weight", "in_proj_b.weight"}) {
    auto h = value_heads(c, p + name, 4, std::string(name).ends_with("weight") ? D : 1);
    ASSERT_TRUE(h) << name;
    EXPECT_EQ(h->first, 0) << name;
  }
  EXPECT_FALSE(value_heads(c, p + "norm.weight", 5, 1));
  EXPECT_FALSE(value_heads(c, "model.language_model.layers.3.self_attn.q_proj.weight", 8, D));
  EXPECT_FALSE(value_heads(hybrid(4, 4, 3, 5), p + "in_proj_z.weight", 20, D));  // nothing moves
}

TEST(GgufValueHeads, BlocksMoveWholeOrNotAtAll) {
  const HeadOrder columns{3, 512, 0, 128};   // out_proj's rows of 512 values, heads of 128
  const auto q8 = columns.in_bytes(32, 34);  // q8_0: 4 blocks per head
  ASSERT_TRUE(q8);
  EXPECT_EQ(q8->row_len, 16 * 34);
  EXPECT_EQ(q8->block, 4 * 34);
  EXPECT_FALSE(columns.in_bytes(256, 144));  // q4_K: a head is half a block
  EXPECT_TRUE((HeadOrder{1, 512 * 64, 256 * 64, 128 * 64}.in_bytes(256, 144)));  // whole rows
  // Q4_1, Q5_0, Q5_1 and IQ4_NL have blocks of 32 (Q5_1: 24 bytes): heads of 128 (every published
  // Qwen3.5 shape) move whole; heads of 16 would split a block, so the matrix falls back to f32
  const auto q5_1 = columns.in_bytes(32, 24);
  ASSERT_TRUE(q5_1);
  EXPECT_EQ(q5_1->row_len, 16 * 24);
  EXPECT_EQ(q5_1->block, 4 * 24);
  EXPECT_FALSE((HeadOrder{3, 512, 0, 16}.in_bytes(32, 24)));
}

}  // namespace
}  // namespace qwen3
