#!/bin/sh
# Installs what the Ruby peer needs on Debian 12 (run as root) and checks that it loads.
# Idempotent: installed packages are kept where they are; apt-get update runs only when
# a package is missing and cannot be installed from the current package lists.
set -eu

packages="ruby ruby-bunny ruby-minitest"
missing=""
for package in $packages; do
  dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $package"
done

if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  echo "install-ruby: installing$missing"
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-upgrade $missing >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-upgrade $missing >/dev/null
  }
fi

cd "$(dirname "$0")/../peers/ruby"
ruby -Ilib -e 'require "acemq"; puts "install-ruby: acemq-ruby #{Acemq::VERSION} on bunny #{Bunny::VERSION}, ruby #{RUBY_VERSION}"'
