// Reads symbol names, one per line, and prints "name<TAB>demangled" as
// libstdc++'s abi::__cxa_demangle (the call perf makes) spells it, or
// "name<TAB>" when it fails. Built and run by make-expected.sh.
#include <cxxabi.h>
#include <cstdlib>
#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        int status = 0;
        char *d = abi::__cxa_demangle(line.c_str(), nullptr, nullptr, &status);
        std::cout << line << '\t';
        if (d && status == 0) std::cout << d;
        std::cout << '\n';
        std::free(d);
    }
}
