#!/usr/bin/env bash
# The web view's browser tests drive Debian's Chromium through Playwright (Playwright's own
# browser download cannot work here). Idempotent: does nothing when the browser is present.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "chromium.sh: /usr/bin/chromium is missing and we are not root; the browser tests will be skipped" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
