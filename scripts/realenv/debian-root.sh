# Sourced by the scripts that run one real build test inside a Debian root they made with
# debootstrap (newer-gcc-root.sh, no-python-headers-root.sh); not run on its own.
#
# The sourcing script sets $repo (the repository), $root (the root, made) and the array
# root_env (the variables besides HOME and the passed ones that commands in the root get:
# PATH, CUDOCTOR_REAL_BUILDS=1...), then calls enter_root. The repository and $HOME (the
# real-env tier's torch environment, uv and its cache, the toolchains) are bind-mounted at
# their own paths, and unmounted when the script exits.

mounted=()
bind() {
    mkdir -p "$root$1"
    if ! mountpoint -q "$root$1"; then
        mount --bind "$1" "$root$1"
        mounted+=("$root$1")
    fi
}
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || true; done
}

# The host's name resolution and certificate authorities (a machine behind an inspecting proxy
# adds its own), /proc, /dev, $HOME and the repository mounted; the host's proxy, certificate
# and package-index settings kept for in_root, nothing else of its environment.
enter_root() {
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    trap cleanup EXIT
    mkdir -p "$root/proc"
    if ! mountpoint -q "$root/proc"; then
        mount -t proc proc "$root/proc"
        mounted+=("$root/proc")
    fi
    bind /dev
    bind "$HOME"
    case "$repo/" in
    "$HOME"/*) ;;
    *) bind "$repo" ;;
    esac
    passed=()
    while IFS= read -r var; do passed+=("$var=${!var}"); done < <(compgen -e | grep -E '^(https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|SSL_CERT_FILE|SSL_CERT_DIR|UV_[A-Z_]+|PIP_[A-Z_]+)$' || true)
}

in_root() {
    chroot "$root" /usr/bin/env -i HOME="$HOME" "${passed[@]}" "${root_env[@]}" "$@"
}

# `SCRIPT -- CMD...`: runs CMD inside the root and exits with its status.
run_given_command() {
    if [ "${1:-}" = "--" ]; then
        shift
        in_root "$@"
        exit $?
    fi
}

# Builds the real_build_readiness test on the host and runs its test NAME inside the root.
run_real_build_test() {
    local test_bin
    test_bin=$(cd "$repo" && cargo test -p cudoctor --test real_build_readiness --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "real_build_readiness":
        print(m["executable"])')
    in_root "$test_bin" --nocapture --test-threads 1 "$1"
}
