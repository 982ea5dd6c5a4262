#!/usr/bin/env bash
# Installs the Debian packages the tests use (Prometheus, promtool, Alertmanager, amtool, openssl;
# podman, runc and mmdebstrap to build and run the images; containerd, the CNI plugins, iproute2,
# iptables and nftables for the stack's real node) without letting their init scripts start
# services on the default ports (containerd's own would take /run/containerd/containerd.sock).
set -euo pipefail
need=()
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null || need+=(prometheus-alertmanager)
command -v openssl >/dev/null || need+=(openssl)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v containerd >/dev/null || need+=(containerd)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v ip >/dev/null || need+=(iproute2)
command -v iptables >/dev/null || need+=(iptables)
command -v nft >/dev/null || need+=(nftables)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
$sudo chmod +x /usr/sbin/policy-rc.d
trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
