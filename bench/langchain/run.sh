#!/usr/bin/env bash
# Times LangChain.js trimMessages on the same corpus inputs as cmd/compare.
# Installs @langchain/core with npm into a temporary folder (removed on exit;
# nothing is written to the repository), exports the inputs from Go, and
# prints a table. Runs are bounded: sizes whose quadratic estimate would
# exceed the time cap are skipped.
#
# Usage: bench/langchain/run.sh [sizes] [seconds]
#   sizes    comma-separated message counts (default 1000,2000,4000,10000,20000;
#            40000 takes about 30 s of CPU for one run, 100000 several minutes)
#   seconds  time cap for the timed runs (default 60); a size whose estimate
#            (quadratic from the previous size) would pass it is skipped
# Needs Go, Node 18+ and npm with access to the npm registry. Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sizes=${1:-1000,2000,4000,10000,20000}
cap=${2:-60}
version=${LANGCHAIN_CORE_VERSION:-1.4.0}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$here/.." && go run ./cmd/compare -export "$tmp/inputs" -sizes "$sizes")

mkdir -p "$tmp/node"
cp "$here/bench.mjs" "$tmp/node/"
cd "$tmp/node"
echo '{"name":"histrim-langchain-bench","private":true,"type":"module"}' > package.json
npm install --no-audit --no-fund --silent "@langchain/core@$version" >/dev/null
node --max-old-space-size=4096 bench.mjs "$tmp/inputs" "$cap"
