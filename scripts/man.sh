#!/usr/bin/env bash
# Writes TOOL's man page (section 1) to OUT from its own --help and each command's --help
# (help2man), so the page says what the binary says. Used by the build (cmake/install.cmake).
#   scripts/man.sh /path/to/TOOL OUT "one-line description"
set -euo pipefail
tool=$1 out=$2 what=$3
inc=$(mktemp)
trap 'rm -f "$inc"' EXIT
{
  echo "[COMMANDS]"
  # The command names: the lines under "Subcommands:" in the tool's --help.
  "$tool" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' |
    while read -r sub; do
      echo ".SS $sub"
      echo ".nf"
      "$tool" "$sub" --help | sed 's/\\/\\\\/g; s/^\./\\\&./'
      echo ".fi"
    done
  echo "[SEE ALSO]"
  echo "dspack(1), dsbench(1), dssync(1); the documentation in docs/ of the source tree."
} > "$inc"
help2man --no-info --no-discard-stderr --section=1 --name="$what" --include="$inc" \
  --output="$out" "$tool"
