#!/usr/bin/env bash
# Builds the local stack's Kubernetes binaries from the pinned Go modules beside this script
# (etcd/, kube/, kwok/, node/: the real node's kubelet, our pause and crireset, proxy/: its
# kube-proxy, dns/: its CoreDNS, a main of ours with only the plugins it uses, and registry/:
# distribution's OCI registry, which serves the stack's images to the real node, and ksm/:
# kube-state-metrics, the real node's OOM-kill source, and promop/: prometheus-operator's operator
# and config reloader, for the stack's --prometheus-operator option) into a cache
# outside the repository, keyed by each module's go.mod, go.sum and Go sources, so a second run
# builds nothing. node/ also yields the real node's sandbox image, pause.oci.tar (FROM scratch:
# our static pause program alone). Prints the directory that holds all binaries, beside
# which kwok-stages/ holds kwok's lifecycle stages from the same pinned module and crds/ the
# upstream PrometheusRule CRD, generated from prometheus-operator's API module (crds/), and the
# VerticalPodAutoscaler CRDs from the pinned vertical-pod-autoscaler module (gen_vpa_crd),
# prometheus-operator/ the operator, its config reloader, every monitoring.coreos.com CRD and its
# RBAC as the pinned module ships them (promop/), with the config reloader's image, prometheus-upstream/
# upstream Prometheus and promtool with the Prometheus image, for the operator stack on the real
# node (prom/; not in prometheus/, which would shadow Debian's on a PATH that holds this directory),
# knative-eventing/ Knative Eventing's commands
# and their images (eventing.sh, eventing/), knative-serving/ Knative Serving's, all but the
# ingress (serving.sh, serving/), helm, which packages, lints and installs the
# release's chart (helm/), and vpa/ and metrics-server/, the Vertical Pod Autoscaler's three
# commands and metrics-server with their images and upstream manifests (vpa/, metrics/).
#
# Usage: build.sh [SET...]: the sets named (cold-times.txt's names: etcd kube node eventing …),
# default every set. A set's extra files (kwok's stages, the sandbox image, kube-state-metrics'
# RBAC, the CRDs, the operator's and Prometheus' images) come with it.
#
# Environment: APPMONITOR_CACHE (default ~/.cache/appmonitor).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${APPMONITOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/appmonitor}

if ! command -v go >/dev/null 2>&1; then
  [ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null 2>&1 || {
  echo "build-bins: no Go toolchain on PATH; install Go 1.26 or set KUBEBUILDER_ASSETS to prebuilt binaries" >&2
  exit 1
}

# The compiler collects its garbage less often: from an empty Go build cache the kube-state-metrics
# set took 217 s instead of 252 s (user CPU 307 s instead of 375 s) at a peak of 1.19 GB instead
# of 1.13 GB (docs/development.md). It does not change what is built.
export GOGC="${GOGC:-400}"
# The compiler writes no DWARF, which `-ldflags=-s -w` drops from every binary anyway: it changes
# nothing that runs, and it cut a set's CPU from an empty Go build cache by 11 to 15 %
# (docs/development.md). In GOFLAGS, so that `go tool controller-gen` is built the same way.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-gcflags=all=-dwarf=false"
# The sets' go.mod files keep the modules they share at one version where they can (docs/development.md):
# a package one set compiled is then taken from the Go build cache by the next.

out="$cache/bin"
mkdir -p "$out"

# Every set in build order, and the seconds its build took on a fresh machine of two cores (an
# empty Go build cache): the expectation each progress line gives. Read from cold-times.txt, the
# one table of cold build times, which the docs quote; its `binaries` line is all the sets built
# together, measured, which is less than their sum (they share packages).
SETS=()
declare -A COLD_SECONDS=()
while read -r name seconds _; do
  case $name in
    '' | '#'* | images) ;;
    binaries) all_s=$seconds ;;
    *) SETS+=("$name") && COLD_SECONDS[$name]=$seconds ;;
  esac
done <"$here/cold-times.txt"
sets_s=0
for set in "${SETS[@]}"; do sets_s=$((sets_s + COLD_SECONDS[$set])); done

# The sets asked for: the arguments, else all.
declare -A WANTED=()
for set in "$@"; do
  [ -n "${COLD_SECONDS[$set]:-}" ] || { echo "build-bins: no set '$set'; the sets: ${SETS[*]}" >&2; exit 2; }
  WANTED[$set]=1
done
[ $# -gt 0 ] || for set in "${SETS[@]}"; do WANTED[$set]=1; done
wanted() { [ -n "${WANTED[$1]:-}" ]; }

# The stamp a set leaves when built: keyed by its go.mod, go.sum and Go sources (crds: go.mod and
# go.sum alone, since controller-gen's output follows from the pinned modules).
stamp_of() {
  local name=$1 dir="$here/$1" key
  if [ "$name" = crds ]; then
    key=$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)
    echo "$out/crds/.crds-$key"
  else
    # A set without Go sources of its own keys on go.mod and go.sum alone.
    key=$(find "$dir" -name '*.go' | LC_ALL=C sort | xargs cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)
    echo "$out/.$name-$key"
  fi
}

# The VerticalPodAutoscaler CRD's module (gen_vpa_crd, below), whose stamp the crds set needs too.
VPA_MODULE=k8s.io/autoscaler/vertical-pod-autoscaler@v1.8.1
VPA_CRD_FILE=autoscaling.k8s.io_verticalpodautoscalers.yaml
VPA_CRD_STAMP="$out/crds/.vpa-${VPA_MODULE##*@}"

# "[n/m] name", n the set's place in SETS.
step_of() {
  local i
  for i in "${!SETS[@]}"; do [ "${SETS[$i]}" = "$1" ] && echo "[$((i + 1))/${#SETS[@]}] $1"; done
}

# One line before a cold build: which sets are missing and about how long they take.
pending=() pending_s=0
for set in "${SETS[@]}"; do
  wanted "$set" || continue
  if [ ! -f "$(stamp_of "$set")" ]; then pending+=("$set"); pending_s=$((pending_s + COLD_SECONDS[$set])); fi
done
if [ ${#pending[@]} -gt 0 ]; then
  # The pending sets' share of the measured whole.
  pending_min=$(((pending_s * all_s / sets_s + 59) / 60))
  echo "build-bins: ${#pending[@]} of ${#WANTED[@]} sets to build from the pinned Go modules (${pending[*]}): about $pending_min min on two cores with an empty Go build cache, less with a warm one" >&2
fi

# Every set asked for built already (a set's stamp is written at the end of the run that built it,
# after its extra files): nothing to wait for. A test file whose sets are built then starts at once
# while another build holds the lock for a set it does not need.
if [ ${#pending[@]} -eq 0 ] && { ! wanted crds || [ -f "$VPA_CRD_STAMP" ]; }; then
  echo "$out"
  exit 0
fi

# One build into a bin/ at a time: two would compile the same sets twice over on two cores and
# race on the files they move into place. The lock lives in bin/ itself, so a cache whose bin/ is
# a link to another's (the demo's newcomer test) shares that one's. It goes with this process,
# however it ends.
exec 9>"$out/.build.lock"
if ! flock -n 9; then
  echo "build-bins: another build into $out is running; waiting for it" >&2
  flock 9
fi
. "$here/oci-image.sh"

built_stamps=()
build_set() { # name, ldflags, packages... (into $BUILD_OUT when set, else the cache's bin/)
  local name=$1 ldflags=$2; shift 2
  local dir="$here/$name" stamp dest=${BUILD_OUT:-$out}
  wanted "$name" || return 0
  stamp=$(stamp_of "$name")
  [ -f "$stamp" ] && return 0
  echo "build-bins: $(step_of "$name"): building $* (cold about ${COLD_SECONDS[$name]} s) ..." >&2
  local t0=$SECONDS
  if ! (cd "$dir" && go mod download && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$dest/" "$@") >&2; then
    echo "build-bins: step 'go build $name' failed; check Go module proxy access (GOPROXY=$(go env GOPROXY)) and the log above" >&2
    exit 1
  fi
  rm -f "$out/.$name-"*
  built_stamps+=("$stamp") # touched at the end, once the set's extra files are in place too
  echo "build-bins: $(step_of "$name"): built in $((SECONDS - t0)) s" >&2
}

kver=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/kube/go.mod")
kminor=$(echo "$kver" | cut -d. -f2)
kube_ld="-X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kminor -X k8s.io/client-go/pkg/version.gitVersion=$kver"

build_set etcd "" go.etcd.io/etcd/server/v3
build_set kwok "" sigs.k8s.io/kwok/cmd/kwok
build_set kube "$kube_ld" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl

[ -x "$out/server" ] && mv -f "$out/server" "$out/etcd"

# The real node's kubelet and kube-proxy must come from the very k8s.io/kubernetes version of the kube set.
for set in node proxy; do
  nver=$(awk '$1 == "k8s.io/kubernetes" { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/$set/go.mod")
  if [ "$nver" != "$kver" ]; then
    echo "build-bins: $set/go.mod requires k8s.io/kubernetes $nver but kube/go.mod $kver; they must match" >&2
    exit 1
  fi
done
build_set node "$kube_ld" k8s.io/kubernetes/cmd/kubelet ./pause ./crireset
build_set proxy "$kube_ld" k8s.io/kubernetes/cmd/kube-proxy
# The real node's cluster DNS: CoreDNS's own module graph needs a newer k8s.io/client-go than the
# kube set's k8s.io/kubernetes, hence its own module.
build_set dns "" ./coredns

# distribution's registry (github.com/distribution/distribution/v3), with its own version stamped
# as its release build does (otherwise it reports v3.0.0+unknown).
rver=$(awk '$1 == "github.com/distribution/distribution/v3" { print $2 }' "$here/registry/go.mod")
build_set registry "-X github.com/distribution/distribution/v3/version.version=$rver" github.com/distribution/distribution/v3/cmd/registry

# kube-state-metrics, the real node's OOM-kill source (cAdvisor misses the kill of a container's
# PID 1); its own module, as its k8s.io/client-go is not the kube set's. Version stamped as its
# release build does.
ksmver=$(awk '$1 == "k8s.io/kube-state-metrics/v2" { print $2 }' "$here/ksm/go.mod")
build_set ksm "-X github.com/prometheus/common/version.Version=$ksmver" k8s.io/kube-state-metrics/v2
# Its RBAC as it ships it (the stack applies these unchanged and runs it with that ServiceAccount's token).
if wanted ksm; then
  ksm_dir=$(cd "$here/ksm" && go list -m -f '{{.Dir}}' k8s.io/kube-state-metrics/v2)
  mkdir -p "$out/kube-state-metrics-rbac"
  for f in service-account.yaml cluster-role.yaml cluster-role-binding.yaml; do
    cp -f "$ksm_dir/examples/standard/$f" "$out/kube-state-metrics-rbac/$f"
  done
fi

# The sandbox image: an OCI image layout archive, FROM scratch, holding /pause alone, which
# containerd imports (`ctr images import`) under the name in its annotations.
! wanted node || [ "$out/pause.oci.tar" -nt "$out/pause" ] || oci_image "$out/pause" localhost/appmonitor/pause:1 "$out/pause.oci.tar" 65535:65535

# kwok's own fast Node and Pod lifecycle stages, from the pinned kwok module (as kwokctl uses them).
if wanted kwok; then
  kwok_dir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$out/kwok-stages"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    cp -f "$kwok_dir/kustomize/stage/$f" "$out/kwok-stages/$(basename "$f")"
  done
fi

# The PrometheusRule CRD as prometheus-operator generates it: controller-gen (pinned as a tool in
# crds/go.mod) over the pinned github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
# module's v1 types. Cached like the binaries, keyed by crds/go.mod and go.sum.
gen_crds() {
  local dir="$here/crds" stamp api tmp
  wanted crds || return 0
  stamp=$(stamp_of crds)
  [ -f "$stamp" ] && return 0
  echo "build-bins: $(step_of crds): generating the PrometheusRule CRD with controller-gen (cold about ${COLD_SECONDS[crds]} s) ..." >&2
  local t0=$SECONDS
  tmp=$(mktemp -d)
  if ! (cd "$dir" && go mod download &&
    api=$(go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring) &&
    go tool controller-gen crd paths="$api/v1" output:crd:dir="$tmp") >&2; then
    rm -rf "$tmp"
    echo "build-bins: step 'controller-gen crd' failed; check Go module proxy access (GOPROXY=$(go env GOPROXY)) and the log above" >&2
    exit 1
  fi
  mkdir -p "$out/crds"
  mv -f "$tmp/monitoring.coreos.com_prometheusrules.yaml" "$out/crds/"
  rm -rf "$tmp"
  rm -f "$out/crds/.crds-"*
  touch "$stamp"
  echo "build-bins: $(step_of crds): generated in $((SECONDS - t0)) s" >&2
}
gen_crds

# The VerticalPodAutoscaler CRDs as the VPA project ships them: deploy/vpa-v1-crd-gen.yaml of the
# pinned k8s.io/autoscaler/vertical-pod-autoscaler module (its zip carries deploy/), fetched with
# `go mod download`, which checks it against the checksum database. Cached by the version.
gen_vpa_crd() {
  local stamp=$VPA_CRD_STAMP dir
  wanted crds || return 0
  [ -f "$stamp" ] && return 0
  echo "build-bins: fetching the VerticalPodAutoscaler CRD from $VPA_MODULE ..." >&2
  if ! dir=$(cd "$here/crds" && go mod download -json "$VPA_MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || [ ! -f "$dir/deploy/vpa-v1-crd-gen.yaml" ]; then
    echo "build-bins: step 'go mod download $VPA_MODULE' failed or gave no deploy/vpa-v1-crd-gen.yaml; check Go module proxy access (GOPROXY=$(go env GOPROXY))" >&2
    exit 1
  fi
  mkdir -p "$out/crds"
  install -m 0644 "$dir/deploy/vpa-v1-crd-gen.yaml" "$out/crds/$VPA_CRD_FILE"
  rm -f "$out/crds/.vpa-"*
  touch "$stamp"
}
gen_vpa_crd

# Knative Eventing and Serving before the operator: more of the real-node files need them.
. "$here/eventing.sh"
. "$here/serving.sh"

# prometheus-operator (promop/: its own module, as its k8s.io/client-go is not the kube set's),
# version stamped as its release build does, into prometheus-operator/ (`operator` alone would be
# ambiguous beside the kube binaries). Beside them, from the same module zip: crds/, every
# monitoring.coreos.com CRD as the project ships them (example/prometheus-operator-crd/), and
# rbac/, the operator's ClusterRole as it ships it (the stack binds it to the operator's
# ServiceAccount unchanged).
promop_out="$out/prometheus-operator"
mkdir -p "$promop_out"
pover=$(awk '$1 == "github.com/prometheus-operator/prometheus-operator" { print $2 }' "$here/promop/go.mod")
BUILD_OUT="$promop_out" build_set promop "-X github.com/prometheus/common/version.Version=${pover#v}" tool
if wanted promop; then
  promop_dir=$(cd "$here/promop" && go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)
  mkdir -p "$promop_out/crds" "$promop_out/rbac"
  install -m 0644 "$promop_dir"/example/prometheus-operator-crd/monitoring.coreos.com_*.yaml "$promop_out/crds/"
  install -m 0644 "$promop_dir/example/rbac/prometheus-operator/prometheus-operator-cluster-role.yaml" "$promop_out/rbac/"
  # The config reloader's image, as the operator's StatefulSets run it (`/bin/prometheus-config-reloader`, its
  # Command there), for the operator stack on the real node; 65534 as the upstream image's user.
  [ "$promop_out/prometheus-config-reloader.oci.tar" -nt "$promop_out/prometheus-config-reloader" ] ||
    oci_image "$promop_out/prometheus-config-reloader" "localhost/appmonitor/prometheus-config-reloader:$pover" \
      "$promop_out/prometheus-config-reloader.oci.tar" 65534:65534 bin
fi

# Upstream Prometheus (prom/) for the operator's StatefulSet on the real node, with Kubernetes service
# discovery alone (the only one the operator's configuration uses; Debian's build has none), and its
# promtool; the image runs /bin/prometheus as the upstream image does, the operator passing args only.
prom_out="$out/prometheus-upstream"
mkdir -p "$prom_out"
# Its module version v0.3MM.P is release 3.MM.P.
prver=$(awk '$1 == "github.com/prometheus/prometheus" { sub(/^v0\.3/, "3.", $2); print $2 }' "$here/prom/go.mod")
GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=remove_all_sd,enable_kubernetes_sd" BUILD_OUT="$prom_out" \
  build_set prom "-X github.com/prometheus/common/version.Version=$prver" tool
! wanted prom || [ "$prom_out/prometheus.oci.tar" -nt "$prom_out/prometheus" ] ||
  oci_image "$prom_out/prometheus" "localhost/appmonitor/prometheus:v$prver" "$prom_out/prometheus.oci.tar" 65534:65534 bin

# Helm (helm/: its own module, as its k8s.io/client-go is not the kube set's), for `npm run release`
# (helm lint, helm package) and the chart's install tests; stamped as its Makefile stamps a release:
# its version, and the Kubernetes version its lint and capabilities assume, from its client-go.
hver=$(awk '$1 == "helm.sh/helm/v3" { print $2 }' "$here/helm/go.mod")
hkminor=$(awk '$1 == "k8s.io/client-go" { print $2 }' "$here/helm/go.mod" | cut -d. -f2)
helm_ld="-X helm.sh/helm/v3/internal/version.version=$hver"
for pkg in pkg/lint/rules pkg/chartutil; do
  helm_ld="$helm_ld -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$hkminor"
done
build_set helm "$helm_ld" tool

# The Vertical Pod Autoscaler (vpa/: its recommender, updater and admission-controller, the module
# build.sh's crds step takes the VPA's CRD from) and metrics-server (metrics/: its own module, as
# its k8s.io/client-go is not the VPA's), for the comparison with the VPA on the real node; each
# with its image as the upstream Dockerfiles make it (the command alone, as /<command>, its
# entrypoint) and, from the same module zips, the deploy manifests the upstream projects ship
# (deploy/ with the admission controller's gencerts.sh; manifests/base/), which the stack installs
# with its changes named (test/harness/stack/vpa-manifests.ts).
vpa_out="$out/vpa"
vpaver=$(awk '$1 == "k8s.io/autoscaler/vertical-pod-autoscaler" { print $2 }' "$here/vpa/go.mod")
BUILD_OUT="$vpa_out" build_set vpa "" tool
if wanted vpa; then
  vpa_dir=$(cd "$here/vpa" && go list -m -f '{{.Dir}}' k8s.io/autoscaler/vertical-pod-autoscaler)
  rm -rf "$vpa_out/deploy" && mkdir -p "$vpa_out/deploy"
  install -m 0644 "$vpa_dir"/deploy/*.yaml "$vpa_out/deploy/"
  install -m 0755 "$vpa_dir/pkg/admission-controller/gencerts.sh" "$vpa_out/deploy/"
  for cmd in recommender updater admission-controller; do
    [ "$vpa_out/$cmd.oci.tar" -nt "$vpa_out/$cmd" ] ||
      oci_image "$vpa_out/$cmd" "localhost/appmonitor/vpa-$cmd:${vpaver#v}" "$vpa_out/$cmd.oci.tar" 65534:65534
  done
fi
ms_out="$out/metrics-server"
msver=$(awk '$1 == "sigs.k8s.io/metrics-server" { print $2 }' "$here/metrics/go.mod")
BUILD_OUT="$ms_out" build_set metrics "-X k8s.io/client-go/pkg/version.gitVersion=$msver" tool
if wanted metrics; then
  ms_dir=$(cd "$here/metrics" && go list -m -f '{{.Dir}}' sigs.k8s.io/metrics-server)
  rm -rf "$ms_out/manifests" && mkdir -p "$ms_out/manifests"
  install -m 0644 "$ms_dir"/manifests/base/*.yaml "$ms_out/manifests/"
  [ "$ms_out/metrics-server.oci.tar" -nt "$ms_out/metrics-server" ] ||
    oci_image "$ms_out/metrics-server" "localhost/appmonitor/metrics-server:$msver" "$ms_out/metrics-server.oci.tar" 65534:65534
fi
[ ${#built_stamps[@]} -eq 0 ] || touch "${built_stamps[@]}"
echo "$out"
