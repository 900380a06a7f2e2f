#!/usr/bin/env bash
# The example operator's suite (examples/memcached) on crdtest and on
# controller-runtime's envtest, one after the other, with the wall time
# of each. envtest's binaries cannot be downloaded here: kube-apiserver
# (of the Kubernetes release compat/e2e pins) and etcd (of the release
# go.mod pins) are built from the Go module proxy once and cached.
#
#   bash compat/envtest/run.sh [test binary flags, e.g. -test.v]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
kube="$(cd "$root/compat/e2e" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
etcd="$(cd "$root" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
assets="${XDG_CACHE_HOME:-$HOME/.cache}/crdserver/envtest/kube-$kube-etcd-$etcd"
mkdir -p "$assets"
if [ ! -x "$assets/kube-apiserver" ]; then
  echo "building kube-apiserver $kube (once; many minutes on a small machine)"
  (cd "$root/compat/e2e" && go build -o "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
fi
if [ ! -x "$assets/etcd" ]; then
  echo "building etcd $etcd (once)"
  (cd "$root" && go build -o "$assets/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$assets/etcd.tmp" "$assets/etcd"
fi

cd "$root"
# Compile both test binaries first, so that the times below are the
# suites' alone.
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/crdtest.test" ./examples/memcached/
go test -tags upstreamenvtest -c -o "$bin/envtest.test" ./examples/memcached/

run() {
  local name=$1; shift
  local start=$EPOCHREALTIME
  (cd examples/memcached && "$@")
  awk -v n="$name" -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%s: %.2f s wall\n", n, e - s }' >> "$bin/summary"
}
run crdtest "$bin/crdtest.test" -test.count=1 "$@"
run envtest env KUBEBUILDER_ASSETS="$assets" "$bin/envtest.test" -test.count=1 "$@"
echo
cat "$bin/summary"
