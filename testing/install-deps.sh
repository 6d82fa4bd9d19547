#!/usr/bin/env bash
# Installs the Debian 12 packages slabcast builds, tests and demos with: only the
# missing ones, so a second run does nothing. Needs root (or sudo) when any is missing.
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libnuma-dev catch2 libfftw3-dev
  libsodium-dev libssl-dev libxxhash-dev libzstd-dev libbenchmark-dev
  # forward error correction: ISA-L's Reed-Solomon kernels
  libisal-dev
  # run-packet codecs (issue 19): ZFP fixed-rate, and LZ4 for the lossless codec
  libzfp-dev
  # fuzzing: clang's libFuzzer and sanitizer runtimes
  clang libclang-rt-14-dev
  # ParaView plugin SDK: Debian 12 ships ParaView 5.11 with its development files
  paraview paraview-dev python3-paraview
  libdouble-conversion-dev liblz4-dev libutfcpp-dev libopenmpi-dev
  # the stream monitor panel (Qt 5): ParaView's GUI SDK, and what its CMake
  # configuration asks for without depending on it
  qtbase5-dev qttools5-dev libqt5svg5-dev libqt5opengl5-dev libhdf5-openmpi-dev libnetcdf-dev libglew-dev
  libxml2-dev libboost-dev libogg-dev libtheora-dev libtiff-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libavdevice-dev
  # tests and demo: rendering without a display, MPI ranks, network peers, plots (slabcast plot)
  python3 xvfb openmpi-bin iproute2 iperf3 xxhash zstd rsync python3-matplotlib
  # LZ4 frames of dataset steps made by the lz4 tool (plugin_dataset_reader)
  lz4
  # the tiled wall's screens taken with xwd (plugin_wall)
  x11-apps
  # libslabcast's Python module and its MPI example (issue 20)
  python3-numpy python3-mpi4py
  # install and packaging (cmake --install, cpack -G DEB; ctest -L install): man
  # pages from --help, the .deb's dependencies, checking the systemd units
  help2man dpkg-dev systemd
)
# `--bench` (make bench): the data mover's peers, an ssh server for rsync and
# scp between namespaces, GridFTP (its server runs only inside the benchmark), and
# the erasure codes FEC is measured against (bench_fec_codes).
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(openssh-server openssh-client globus-gass-copy-progs globus-gridftp-server-progs
             libcm256cc-dev libjerasure-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-deps: done"
