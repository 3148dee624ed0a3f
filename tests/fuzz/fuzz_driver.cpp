// Bounded fuzz driver: feeds LLVMFuzzerTestOneInput random and mutated inputs, so fuzz targets
// run in CI under AddressSanitizer/UBSan with any compiler. Seeds come from files given as
// arguments; otherwise from random bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> mutate(std::vector<uint8_t> input, std::mt19937_64& rng) {
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 5) {
      case 0:  // flip a byte
        if (!input.empty()) input[rng() % input.size()] = static_cast<uint8_t>(rng());
        break;
      case 1:  // insert a byte
        input.insert(input.begin() + static_cast<long>(input.empty() ? 0 : rng() % input.size()),
                     static_cast<uint8_t>(rng()));
        break;
      case 2:  // erase a byte
        if (!input.empty()) input.erase(input.begin() + static_cast<long>(rng() % input.size()));
        break;
      case 3:  // truncate
        if (!input.empty()) input.resize(rng() % input.size());
        break;
      default:  // interesting digits and JSON punctuation
        if (!input.empty()) input[rng() % input.size()] = "0123456789{}[]\",:-e"[rng() % 19];
        break;
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 10000;
  uint64_t seed = 1;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::ifstream in(argv[i], std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  std::mt19937_64 rng(seed);
  extern std::vector<std::vector<uint8_t>> fuzz_seeds();
  for (auto& s : fuzz_seeds()) corpus.push_back(std::move(s));
  for (auto& s : corpus) LLVMFuzzerTestOneInput(s.data(), s.size());
  for (long i = 0; i < iterations; ++i) {
    std::vector<uint8_t> input;
    if (corpus.empty() || rng() % 8 == 0) {
      input.resize(rng() % 256);
      for (auto& b : input) b = static_cast<uint8_t>(rng());
    } else {
      input = mutate(corpus[rng() % corpus.size()], rng);
    }
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("fuzz: %ld iterations, seed %llu, no crash\n", iterations,
              static_cast<unsigned long long>(seed));
  return 0;
}
