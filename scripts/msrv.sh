#!/usr/bin/env bash
# The minimum supported Rust version (MSRV, `rust-version` in each
# Cargo.toml), proven with a real older toolchain: Debian's `rustc-web` and
# `cargo-web` 1.85 packages (installed if missing; they put `cargo` and
# `rustc` in /usr/bin, behind rustup's in PATH, so nothing else changes).
#
#   bash scripts/msrv.sh            # from any directory
#
# What it runs with 1.85, on a copy of the tracked files:
#   - the user's test commands from the README, `cargo test` and
#     `cargo test --features async` (unit, integration and doc tests of `aqs`);
#   - `cargo check --all-targets` of `aqs-zookeeper` and `aqs-etcd` (their
#     tests need servers; scripts/zookeeper-ci.sh and scripts/etcd-ci.sh run
#     them with the current stable toolchain).
# The benchmark crate (`aqs-benchmark`, not published) is left out: it
# compares against peers that need newer compilers.
#
# The copy resolves its own lockfile with Cargo's MSRV-aware resolver
# (`incompatible-rust-versions = "fallback"`), which is what a user on 1.85
# gets; the repository's Cargo.lock (for the current stable) is untouched.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MSRV=1.85
export CARGO_TERM_COLOR=never

have_msrv() {
  [[ -x /usr/bin/cargo && -x /usr/bin/rustc ]] &&
    grep -q "^rustc ${MSRV}\." <<<"$(/usr/bin/rustc --version)"
}

if ! have_msrv; then
  # bookworm main carries 1.85; bookworm-security carries newer ones, so
  # the version is named.
  version=$(apt-cache madison rustc-web 2>/dev/null | awk -v v="${MSRV}." \
    '$3 ~ "^" v { print $3; exit }')
  if [[ -z "${version}" ]]; then
    apt-get update -qq
    version=$(apt-cache madison rustc-web | awk -v v="${MSRV}." '$3 ~ "^" v { print $3; exit }')
  fi
  [[ -n "${version}" ]] || { echo "no rustc-web ${MSRV} in the Debian archive" >&2; exit 1; }
  apt-get install -y -qq "rustc-web=${version}" "cargo-web=${version}" \
    "libstd-rust-web-dev=${version}" >/dev/null
fi
have_msrv || { echo "rustc-web ${MSRV} did not install" >&2; exit 1; }

export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
cargo=/usr/bin/cargo
# Rustup's proxies must not be consulted, whatever the environment says.
unset RUSTUP_TOOLCHAIN

grep -q "^rust-version = \"${MSRV}\"" Cargo.toml ||
  { echo "Cargo.toml's rust-version is not ${MSRV}; update this script" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
git ls-files -z | tar --null -cf - -T - | tar -xf - -C "${work}"
cd "${work}"
rm -f Cargo.lock
export CARGO_TARGET_DIR="${work}/target"

echo "--- msrv: $(${cargo} --version); $(${RUSTC} --version)"
CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback ${cargo} generate-lockfile
${cargo} test
${cargo} test --features async
${cargo} check -p aqs-zookeeper -p aqs-etcd --all-targets
echo "--- msrv: ${MSRV} builds and passes"
