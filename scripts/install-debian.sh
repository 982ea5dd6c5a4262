#!/usr/bin/env bash
# The Debian packages the local stack, the demo and the tests use, installed as root without
# letting their init scripts start services on the default ports (containerd's own would take
# /run/containerd/containerd.sock). Installs only what is missing and says what and why.
#
#   bash scripts/install-debian.sh          install what is missing (root, or sudo)
#   bash scripts/install-debian.sh --check  print what is missing, one package a line; exit 1 if any
set -euo pipefail
need=() why=()
want() { # package, why, test...
  local pkg=$1 reason=$2; shift 2
  "$@" >/dev/null 2>&1 && return 0
  need+=("$pkg"); why+=("$pkg: $reason")
}
want prometheus "the stack's Prometheus and promtool (rules, scrapes, alerts)" command -v prometheus
want prometheus-alertmanager "the stack's Alertmanager and amtool" command -v prometheus-alertmanager
want openssl "the stack's CA and certificates" command -v openssl
want podman "builds and runs the function images" command -v podman
want runc "the OCI runtime of podman and of the real node's containerd" command -v runc
want mmdebstrap "the images' Debian base layer" command -v mmdebstrap
want containerd "the real node's container runtime" command -v containerd
want containernetworking-plugins "the real node's Pod network (bridge, host-local)" test -x /usr/lib/cni/bridge
want iproute2 "the real node's interfaces" command -v ip
want iptables "the real node's network fence" command -v iptables
want nftables "kube-proxy's Service rules on the real node" command -v nft
want skopeo "pushes the images the real node pulls into the stack's registry" command -v skopeo

if [ "${1:-}" = "--check" ]; then
  [ ${#need[@]} -eq 0 ] && exit 0
  printf '%s\n' "${need[@]}"
  exit 1
fi
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing Debian packages:" >&2
printf '  %s\n' "${why[@]}" >&2
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
$sudo chmod +x /usr/sbin/policy-rc.d
trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
