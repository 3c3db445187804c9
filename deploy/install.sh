#!/usr/bin/env bash
# Root-free install of ServerFS for the current user (docs/deployment.md):
#   - builds the single-file binary and puts it at ~/.local/bin/serverfs (a new file renamed over the
#     old one, so a running Bridge or MCP server keeps its own copy until it restarts);
#   - writes the systemd --user unit for the Bridge to ~/.config/systemd/user/serverfs-bridge.service;
#   - with DIR arguments and no config yet, runs `serverfs init DIR…` (starter config, directories
#     with their modes, the checks, each MCP host's setup).
# Usage: deploy/install.sh [DIR…]     Environment: SERVERFS_BIN_DIR (default ~/.local/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir="${SERVERFS_BIN_DIR:-$HOME/.local/bin}"
config_home="${XDG_CONFIG_HOME:-$HOME/.config}"
unit_dir="$config_home/systemd/user"
config="$config_home/serverfs/serverfs.toml"

# Replaces $2 with $1 through a temporary file in the same directory and a rename.
place() {
  local tmp
  tmp="$(dirname "$2")/.$(basename "$2").new.$$"
  cp "$1" "$tmp"
  chmod "$3" "$tmp"
  mv -f "$tmp" "$2"
}

echo "building dist/serverfs ..."
npm run --silent build >/dev/null
mkdir -p "$bin_dir"
place dist/serverfs "$bin_dir/serverfs" 0755
echo "installed $bin_dir/serverfs ($("$bin_dir/serverfs" --version))"

mkdir -p "$unit_dir"
unit_tmp="$(mktemp)"
sed -e "s|@SERVERFS@|$bin_dir/serverfs|g" -e "s|@CONFIG@|$config|g" deploy/serverfs-bridge.service >"$unit_tmp"
place "$unit_tmp" "$unit_dir/serverfs-bridge.service" 0644
rm -f "$unit_tmp"
echo "installed $unit_dir/serverfs-bridge.service"

if [ $# -gt 0 ] && [ ! -e "$config" ]; then
  echo
  "$bin_dir/serverfs" init "$@"
fi

echo
# Not on PATH, a new shell says "serverfs: command not found": give the exact line for the user's shell.
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *)
    shell_name="$(basename "${SHELL:-sh}")"
    case "$shell_name" in
      bash) rc="$HOME/.bashrc" line="export PATH=\"$bin_dir:\$PATH\"" ;;
      zsh) rc="${ZDOTDIR:-$HOME}/.zshrc" line="export PATH=\"$bin_dir:\$PATH\"" ;;
      fish) rc="$config_home/fish/config.fish" line="fish_add_path $bin_dir" ;;
      *) rc="$HOME/.profile" line="export PATH=\"$bin_dir:\$PATH\"" ;;
    esac
    echo "serverfs is not on your PATH: $bin_dir is not in it, so a new shell would say 'serverfs: command not found'."
    echo "Add it for $shell_name (once), then open a new shell:"
    echo "  echo '$line' >> $rc"
    echo "or, in this shell only: $line"
    ;;
esac
[ -e "$config" ] || echo "next: serverfs init DIR…   (writes $config and prints how to connect your MCP client)"
echo "for agent tasks: set [bridge] enabled = true in $config, then"
echo "  systemctl --user daemon-reload && systemctl --user enable --now serverfs-bridge"
