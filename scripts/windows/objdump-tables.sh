#!/usr/bin/env bash
# What binutils' PE reader (mingw-w64's objdump -p) prints of a PE file's headers, imports and
# export names: the oracle the PE reader of crates/cudoctor-pe is compared with. Keeps the
# file format and characteristics lines, "The Data Directory", "The Import Tables" and the
# export directory with its "[Ordinal/Name Pointer] Table"; drops the export address table,
# the function table (.pdata), relocations and the rest, which are large and not compared.
#   scripts/windows/objdump-tables.sh FILE > FILE.objdump.txt
set -euo pipefail
objdump="${OBJDUMP:-x86_64-w64-mingw32-objdump}"
"$objdump" -p "$1" | awk '
  /file format/ { sub(/^.*:[ \t]+/, ""); print; next }
  /^Characteristics / { keep = 1 }
  /^Time\/Date\t/ { keep = 0 }
  /^The Data Directory/ || /^The Import Tables/ || /^The Export Tables/ || /^\[Ordinal\/Name Pointer\] Table/ { keep = 1 }
  /^Export Address Table/ || /^The Function Table/ || /^PE File Base Relocations/ || /^There is a debug/ || /^The .rsrc/ || /^Magic/ { keep = 0 }
  keep { print }
'
