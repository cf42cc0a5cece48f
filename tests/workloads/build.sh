#!/usr/bin/env bash
# Builds the fixture workloads into /tmp/pstitch-fixtures/bin/.
#
# The sources are first copied to /tmp/pstitch-fixtures/src/ and compiled there, so
# that neither the binaries (DWARF comp_dir / file names) nor any perf.data recorded
# from them mention the checkout's path. Everything is built with frame pointers
# (perf record -g uses them) and with debug info (for srcline / inline output).
#
# Usage: tests/workloads/build.sh        (needs gcc, g++, rustc; no root needed)
# Output: /tmp/pstitch-fixtures/bin/{cwork,cppwork,rustwork,forkexec,vanish,bpfload,bpfrun,jitwork}, and the
#         DWARF-unwinding workloads (issue 25) built WITHOUT frame pointers:
#         {dwarfwork,cppdwarf,rustdwarf,libcwork} plus pywork.py (run by Debian's python3)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FIX=/tmp/pstitch-fixtures
SRC=$FIX/src
BIN=$FIX/bin
mkdir -p "$SRC" "$BIN"
cp "$HERE"/cwork.c "$HERE"/cppwork.cpp "$HERE"/rustwork.rs "$HERE"/forkexec.c "$HERE"/vanish.c "$HERE"/bpfload.c "$HERE"/bpfrun.c "$SRC"/
cp "$HERE"/jitwork.c "$HERE"/bytework.c "$SRC"/
cp "$HERE"/dwarfwork.c "$HERE"/dwarfwork-df.c "$HERE"/cppdwarf.cpp "$HERE"/rustdwarf.rs "$HERE"/libcwork.c "$SRC"/
cd "$SRC"

CFLAGS="-O2 -g -fno-omit-frame-pointer"
gcc $CFLAGS -pthread -o "$BIN"/cwork cwork.c
gcc $CFLAGS -o "$BIN"/forkexec forkexec.c
gcc $CFLAGS -o "$BIN"/vanish vanish.c
gcc $CFLAGS -o "$BIN"/bpfload bpfload.c
gcc $CFLAGS -o "$BIN"/bpfrun bpfrun.c
gcc $CFLAGS -o "$BIN"/jitwork jitwork.c
# A program whose path is not UTF-8 (tests/golden/non-utf8).
gcc $CFLAGS -pthread -o "$BIN"/bytework bytework.c
cp "$BIN"/bytework "$BIN/$(printf 'byte\xffwork\xe9')"
g++ $CFLAGS -o "$BIN"/cppwork cppwork.cpp
# LTO keeps the binary small (std's debug info for unused code is dropped); the
# debug sections are zlib-compressed (SHF_COMPRESSED), like the distro's .debug files.
rustc --edition 2021 -C opt-level=2 -C force-frame-pointers=yes -C debuginfo=1 \
    -C panic=abort -C strip=none -C lto=fat -C codegen-units=1 \
    -C link-arg=-Wl,--compress-debug-sections=zlib \
    -o "$BIN"/rustwork rustwork.rs

# DWARF-unwinding workloads (issue 25): no frame pointers, so `perf record
# --call-graph dwarf` recordings need CFI to be unwound. dwarfwork-df.c gets no
# .eh_frame at all (only .debug_frame, from -g), to exercise the .debug_frame path.
NOFP="-O2 -g -fomit-frame-pointer"
gcc $NOFP -c -o dwarfwork.o dwarfwork.c
gcc $NOFP -fno-asynchronous-unwind-tables -c -o dwarfwork-df.o dwarfwork-df.c
gcc -pthread -o "$BIN"/dwarfwork dwarfwork.o dwarfwork-df.o -lm
g++ $NOFP -pthread -o "$BIN"/cppdwarf cppdwarf.cpp
gcc $NOFP -o "$BIN"/libcwork libcwork.c
rustc --edition 2021 -C opt-level=2 -C force-frame-pointers=no -C debuginfo=1 \
    -C strip=none -C lto=fat -C codegen-units=1 -C link-arg=-Wl,--compress-debug-sections=zlib \
    -o "$BIN"/rustdwarf rustdwarf.rs
cp "$HERE"/pywork.py "$BIN"/pywork.py

# Sanity checks on the symbol shapes the fixtures rely on.
nm -C "$BIN"/cppwork | grep -E '\[clone \.(isra|constprop)\.[0-9]+\]' >/dev/null \
    || { echo "build.sh: cppwork has no .isra/.constprop clone" >&2; exit 1; }
# hash_buffer must contain inlined mix64/rotl (DW_TAG_inlined_subroutine)
readelf --debug-dump=info "$BIN"/cwork | grep DW_TAG_inlined_subroutine >/dev/null \
    || { echo "build.sh: cwork has no inlined subroutines in DWARF" >&2; exit 1; }
readelf -S "$BIN"/dwarfwork | grep -q '\.debug_frame' \
    || { echo "build.sh: dwarfwork has no .debug_frame" >&2; exit 1; }
echo "built: $(cd "$BIN" && ls | tr '\n' ' ')"
