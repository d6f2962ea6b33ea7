#!/usr/bin/env bash
# Installs the agent CLIs that tests/integration/test_agent_clis.py drives headless, Claude Code
# and Codex, from the npm registry into .cache/agent-clis (gitignored). Idempotent: when both
# are there at the wanted versions it does nothing. CLAUDE_CODE_VERSION and CODEX_VERSION
# choose other versions. Exits non-zero when npm is missing or the install fails (scripts/test
# only warns; the test then skips, saying why, when the registry cannot be reached).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=.cache/agent-clis
CLAUDE_CODE_VERSION="${CLAUDE_CODE_VERSION:-2.1.332}"
CODEX_VERSION="${CODEX_VERSION:-0.171.0}"

installed() {  # the installed version of package $1, or nothing
  local manifest="$DEST/node_modules/$1/package.json"
  [ -f "$manifest" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
  return 0
}

if [ "$(installed @anthropic-ai/claude-code)" = "$CLAUDE_CODE_VERSION" ] \
    && [ "$(installed @openai/codex)" = "$CODEX_VERSION" ] \
    && [ -x "$DEST/node_modules/.bin/claude" ] && [ -x "$DEST/node_modules/.bin/codex" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "agent-clis.sh: npm is not installed (Debian: apt-get install npm)" >&2
  exit 1
fi
mkdir -p "$DEST"
echo "agent-clis.sh: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and" \
     "@openai/codex@$CODEX_VERSION into $DEST" >&2
npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error \
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION"
