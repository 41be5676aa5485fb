#!/bin/sh
# Installs what the Ruby peer needs on Debian 12 (run as root) and checks that it loads.
# Idempotent: installed packages are kept where they are; apt-get update runs only when
# a package is missing and cannot be installed from the current package lists.
set -eu

. "$(dirname "$0")/apt.sh"
apt_install ruby ruby-bunny ruby-minitest rake

cd "$(dirname "$0")/../peers/ruby"
ruby -Ilib -e 'require "acemq"; require "rake"; puts "install-ruby: acemq-ruby #{Acemq::VERSION} on bunny #{Bunny::VERSION}, ruby #{RUBY_VERSION}"'
