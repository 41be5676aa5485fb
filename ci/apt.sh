# Sourced by the ci/ scripts: apt_install PKG... installs the Debian packages that are not
# installed yet, as root, keeping installed ones where they are (--no-upgrade); it runs
# `apt-get update` only when the current package lists cannot serve the install.
apt_install() {
    missing=""
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
    done
    [ -z "$missing" ] && return 0
    echo "apt: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    apt-get install -y -q --no-upgrade $missing >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        # shellcheck disable=SC2086
        apt-get install -y -q --no-upgrade $missing >/dev/null
    }
}
