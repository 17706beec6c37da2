#!/bin/sh
# Installs Debian's chromium for the search page's browser test
# (serve.TestSearchPage, chromedp over the DevTools protocol; it skips
# without a browser). Needs root and the Debian package mirrors; about
# 100 MB of packages, 1-3 minutes; .ci/run should run it before the tests.
set -eu
if command -v chromium >/dev/null 2>&1; then
	chromium --version
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
chromium --version
