# Every library slabcast builds against, found once for the whole tree (the
# ParaView SDK is found in plugin/, the only place that builds against it).
# All are Debian 12 packages; testing/install-deps.sh installs them.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
# zfp and LZ4: the run packets' codecs; libsodium: the control packets' HMAC
# (Balman et al., 2012, section 4.3) and the keys.
find_package(zfp 1.0 REQUIRED CONFIG)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(NUMA REQUIRED IMPORTED_TARGET numa)
# Forward error correction's Reed-Solomon code (slabcast/erasure_code.h).
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
# The mover: xxHash checksums its blocks, zstd compresses its manifest, and
# OpenSSL's AES-256-GCM seals its records (the same bytes on the wire as
# libsodium's, at the speed docs/mover.md gives).
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# The dataset generator's Zel'dovich displacements (data/).
pkg_check_modules(FFTW3F REQUIRED IMPORTED_TARGET fftw3f)
