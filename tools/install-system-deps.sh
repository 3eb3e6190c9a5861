#!/usr/bin/env bash
# Install the Debian packages crosstrace uses (decoders, cross toolchain, emulator, headless browser).
# Needs root and apt-get; elsewhere it prints what to install and succeeds.
set -euo pipefail
pkgs=(sigrok-cli gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm cmake ninja-build chromium
      babeltrace2 python3-bt2  # babeltrace2: reference reader for the CTF differential tests
      device-tree-compiler gperf  # Zephyr firmware build (firmware/zephyr)
      make python3 git patch util-linux)  # RIOT firmware build (firmware/ports/riot: its make + scripts, git, patch; flock)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "note: install these Debian packages for the full feature set: ${missing[*]}" >&2
fi
