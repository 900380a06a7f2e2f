#!/bin/sh
# Points this module at another Kubernetes release:
#
#	./upgrade.sh v1.37.2
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, client-go, …)
# at v0.0.0 and replaces them with directories of its own repository, which
# a module proxy does not serve. This script reads that replace list from
# k8s.io/kubernetes' go.mod and replaces each staging module with its
# tagged release (v1.X.Y → v0.X.Y) instead, then tidies the module.
set -eu
cd "$(dirname "$0")"
version=${1:?usage: $0 v1.X.Y}
staging=v0.${version#v1.}
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod"); do
	go mod edit -replace "$m=$m@$staging"
done
go mod edit -require "k8s.io/kubernetes@$version"
go mod tidy
