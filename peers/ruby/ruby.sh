#!/bin/sh
# Runs a command (rake test, ruby bin/peer.rb, ...) with the gems this machine can satisfy:
#  - Debian's packages (ruby-bunny, ruby-minitest, rake) where ruby-bunny is installed:
#    plain ruby, no Bundler, nothing fetched;
#  - Bundler with Gemfile.lock (RubyGems) everywhere else: `bundle install` when the
#    locked gems are missing, then `bundle exec`.
# ACEMQ_RUBY_ROUTE=bundler or debian overrides the choice.
set -e
cd "$(dirname "$0")"
route=${ACEMQ_RUBY_ROUTE:-}
if [ -z "$route" ]; then
	if dpkg-query -W -f='${Status}' ruby-bunny 2>/dev/null | grep -q "install ok installed"; then
		route=debian
	else
		route=bundler
	fi
fi
case "$route" in
debian)
	exec "$@"
	;;
bundler)
	# stdout is the peer protocol's: Bundler's chatter goes to stderr.
	bundle check >/dev/null 2>&1 || bundle install 1>&2
	exec bundle exec "$@"
	;;
*)
	echo "ruby.sh: ACEMQ_RUBY_ROUTE is debian or bundler, not '$route'" >&2
	exit 2
	;;
esac
