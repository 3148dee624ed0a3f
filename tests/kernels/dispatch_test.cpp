// The qwen3 executable runs on any x86-64 CPU: code beyond the baseline is only ever reached
// through the kernel table dispatch picks, so a CPU without AVX2 or AVX-512 never executes it.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "test_paths.h"

namespace qwen3 {
namespace {

// The lines `command` prints on stdout.
std::vector<std::string> lines_of(const std::string& command) {
  std::vector<std::string> out;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::string line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) {
    line += buffer;
    if (line.back() != '\n') continue;
    line.pop_back();
    out.push_back(std::move(line));
    line.clear();
  }
  pclose(pipe);
  return out;
}

// Whether an instruction, as objdump prints its bytes ("c5 fc 11 00"), is VEX or EVEX encoded:
// its first byte after segment and address-size prefixes is c4 or c5 (VEX) or 62 (EVEX), which
// 64-bit mode gives no other meaning. Every AVX, AVX2, FMA, F16C, AVX-512 and AMX instruction is.
bool beyond_baseline(const std::string& bytes) {
  std::istringstream in(bytes);
  for (std::string b; in >> b;) {
    if (b == "26" || b == "2e" || b == "36" || b == "3e" || b == "64" || b == "65" || b == "67")
      continue;
    return b == "c4" || b == "c5" || b == "62";
  }
  return false;
}

// Such code is safe where dispatch alone reaches it: in a kernel set's own functions. A global
// symbol (one the linker may take from any object that defines it, as it does an inline
// function's) must be named for its instruction set, so no plain function (a std::vector
// destructor a kernel file emitted too) can be a kernel file's copy; a local one (an anonymous
// namespace's) must be in qwen3::cpu.
bool reached_by_dispatch_only(const std::string& symbol, char binding) {
  std::string lower = symbol;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("avx2") != std::string::npos || lower.find("avx512") != std::string::npos ||
      lower.find("amx") != std::string::npos)
    return true;
  return binding == 't' && symbol.find("N5qwen33cpu") != std::string::npos;
}

// The function a direct call or jump goes to ("call   1edea0 <symbol>"), or "" for any other
// instruction, an indirect one, or one within the same function ("<symbol+0x12>").
std::string direct_target(const std::string& instruction) {
  if (!instruction.starts_with("call") && !instruction.starts_with("jmp")) return "";
  const size_t open = instruction.find('<'), close = instruction.rfind('>');
  if (open == std::string::npos || close < open || instruction.find('*') != std::string::npos)
    return "";
  const std::string target = instruction.substr(open + 1, close - open - 1);
  return target.find("+0x") == std::string::npos ? target : "";
}

// Two ways to run a kernel set's code where the CPU lacks it, both silent wherever it has it:
// the linker taking a kernel file's copy of a shared inline function, and code run before main
// (a table built at start-up) reaching a kernel set.
void expect_only_kernel_sets_beyond_x86_64(const std::string& path) {
  SCOPED_TRACE(path);
  const std::string binary = test::shell_quote(path);
  std::map<std::string, char> binding;  // function symbol -> nm's letter
  for (const std::string& line : lines_of("nm --defined-only " + binary + " 2>/dev/null")) {
    std::istringstream in(line);
    std::string address, letter, name;
    if (in >> address >> letter >> name && letter.size() == 1) binding[name] = letter[0];
  }
  ASSERT_FALSE(binding.empty()) << "nm (binutils) found nothing in " << binary;

  std::string function;  // objdump -d: "<address> <symbol>:", then "  addr:\tbytes\tmnemonic"
  std::map<std::string, std::string> beyond;           // symbol -> its first such instruction
  std::map<std::string, std::set<std::string>> calls;  // symbol -> the functions it calls
  size_t instructions = 0;
  for (const std::string& line : lines_of("objdump -d " + binary + " 2>/dev/null")) {
    if (line.size() > 3 && line.ends_with(">:")) {
      const size_t open = line.find('<');
      function = line.substr(open + 1, line.size() - open - 3);
      continue;
    }
    const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) continue;  // not an instruction (or its bytes' second line)
    ++instructions;
    const std::string instruction = line.substr(tab2 + 1);
    if (const std::string target = direct_target(instruction); !target.empty())
      calls[function].insert(target);
    if (beyond_baseline(line.substr(tab1 + 1, tab2 - tab1 - 1)))
      beyond.emplace(function, instruction);
  }
  ASSERT_GT(instructions, 100000u) << "objdump (binutils) disassembled too little of " << binary;
  EXPECT_FALSE(beyond.empty());  // the kernels themselves: the scan sees them

  for (const auto& [symbol, instruction] : beyond) {
    const auto b = binding.find(symbol);
    EXPECT_TRUE(reached_by_dispatch_only(symbol, b == binding.end() ? '?' : b->second))
        << symbol << " (nm: " << (b == binding.end() ? '?' : b->second) << ") runs " << instruction
        << ": beyond x86-64, a global symbol must be named for its instruction set (the linker "
           "may take it for any object's copy), a local one be in qwen3::cpu";
  }
  // Static initializers (GCC names them _GLOBAL__sub_I_<file>) and all they call directly.
  std::vector<std::string> todo;
  std::map<std::string, std::string> caller;  // reached function -> the one that called it
  for (const auto& [symbol, letter] : binding)
    if (symbol.starts_with("_GLOBAL__sub_I_")) todo.push_back(symbol), caller[symbol] = "";
  EXPECT_FALSE(todo.empty());
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    if (beyond.count(f)) {
      std::string chain = f;
      for (std::string c = caller[f]; !c.empty(); c = caller[c]) chain = c + " -> " + chain;
      ADD_FAILURE() << "start-up code reaches a kernel set: " << chain;
    }
    for (const std::string& g : calls[f])
      if (caller.emplace(g, f).second) todo.push_back(g);
  }
}

TEST(Dispatch, OnlyKernelSetsUseInstructionsBeyondX8664) {
  // The executable, and this test binary: the linker picks each one's copies on its own.
  expect_only_kernel_sets_beyond_x86_64(test::qwen3_binary());
  expect_only_kernel_sets_beyond_x86_64(std::filesystem::read_symlink("/proc/self/exe"));
}

}  // namespace
}  // namespace qwen3
