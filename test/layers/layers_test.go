// Package layers checks that imports between crdserver's packages point one
// way: down the request path, never back up (DESIGN.md).
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/crdserver/crdserver/"

// layer of each package; a package may import only packages of a lower
// layer. A new package must be placed here, or the test fails.
var layer = map[string]int{
	// Leaves: contracts and pure helpers.
	"internal/request":             0,
	"internal/storage":             0,
	"internal/registry":            0,
	"internal/codec":               0,
	"internal/compress":            0,
	"internal/certs":               0,
	"internal/version":             0,
	"internal/authn":               0,
	"internal/authn/jws":           0,
	"internal/authn/satoken":       1,
	"internal/authn/oidc":          1,
	"internal/storage/etcdlog":     0,
	"internal/schema/structural":   0,
	"internal/webhook/h2":          0,
	"internal/webhook":             1,
	"internal/webhook/webhooktest": 1,
	"internal/webhook/webhookcert": 0,
	"internal/endpoints":           0,
	"internal/fairness":            0,
	// Forwarding to a backend, for the proxy subresources.
	"internal/forward": 1,
	// Requests classified by FlowSchemas, compiled from the objects.
	"internal/flowcontrol": 1,
	"internal/health":      0,
	"internal/textpages":   0,
	"internal/metacheck":   0,
	// The component pages, /statusz and /flagz.
	"internal/zpages": 1,
	// What ResourceQuotas count, from objects given.
	"internal/quota": 1,
	// What a pod's containers need, summed as upstream sums it.
	"internal/podresources": 0,
	// CEL rules type against structural schemas; the schema pipeline runs them.
	"internal/cel": 1,
	// The schema pipeline: prune, default, validate, then the CEL rules.
	"internal/schema": 2,
	// One step each: storage backends, the cache, definitions, documents.
	"internal/authz": 1,
	// Audit policy decisions read authorization attributes.
	"internal/audit": 2,
	// Encryption at rest wraps a storage.
	"internal/storage/encrypt": 1,
	// Metrics time storage requests, so they sit above the storage contract.
	"internal/metrics":             1,
	"internal/watchcache":          1,
	"internal/storage/etcd":        1,
	"internal/storage/embedded":    1,
	"internal/storage/memory":      1,
	"internal/storage/storagetest": 1,
	"internal/builtin":             2,
	// The warnings upstream gives a pod template, for the workload kinds.
	"internal/builtin/podwarnings": 0,
	// RBAC decisions from the watch caches; its bootstrap policy above it.
	"internal/rbac":           2,
	"internal/rbac/bootstrap": 3,
	"internal/discovery":      1,
	"internal/openapi":        1,
	"internal/conversion":     2,
	// Server-side apply: managedFields, typed from the OpenAPI models.
	"internal/apply": 2,
	// Admission: mutating and validating webhooks.
	"internal/admission": 2,
	// The request path and background loops.
	"internal/storage/etcdtest": 3,
	"internal/crd":              3,
	"internal/filters":          3,
	"internal/handler":          3,
	"internal/controllers":      3,
	"internal/router":           3,
	// Wiring.
	"internal/server":  4,
	"internal/loadgen": 4,
	"internal/lint":    4,
	"internal/migrate": 4,
	// Entry points.
	"cmd/crdserver":        5,
	"internal/openapi/gen": 5,
	"crdtest":              5,
	"crdtest/envtest":      6,
	"examples/memcached":   6,
	"test/etcdserver":      5,
	"test/toolbin":         4,
	"test/kubectlbin":      5,
	"test/helmbin":         5,
	"test/kubectlbin/find": 6,
	"test/helmbin/find":    6,
	"test/e2e":             6,
	"test/layers":          6,
	"test/rbacmatrix":      0,
	// Several replicas on an etcd cluster, and the checker of what they did.
	"test/cluster/history":        0,
	"test/cluster":                5,
	"test/cluster/cmd/devcluster": 6,
}

func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		pkg = strings.TrimPrefix(pkg, module)
		l, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no layer: add it to layers_test.go", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if dl, ok := layer[dep]; ok && dl >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", pkg, l, dep, dl)
			}
		}
	}
}

// forbidden are the upstream server packages crdserver replaces
// (DESIGN.md, Dependencies).
var forbidden = []string{
	"k8s.io/apiserver/pkg/endpoints",
	"k8s.io/apiserver/pkg/registry",
	"k8s.io/apiserver/pkg/server",
	"k8s.io/apiserver/pkg/storage",
	"k8s.io/apiextensions-apiserver/pkg/apiserver",
	"k8s.io/apiextensions-apiserver/pkg/registry",
	"k8s.io/apiextensions-apiserver/pkg/controller",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation",
	"k8s.io/kube-openapi/pkg/validation/validate",
	"k8s.io/kubernetes",
}

func TestNoUpstreamServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"cmd/crdserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("crdserver depends on %s, which it replaces", dep)
			}
		}
	}
}

// heavy are packages that would link every built-in API type (or every
// client), or test scaffolding, into the binary: each package's init maps
// its code pages, so they cost idle RSS although the server never calls
// them. The value says what to do instead.
var heavy = map[string]string{
	"k8s.io/client-go/kubernetes": "use the dynamic client or a raw request instead",
	"k8s.io/client-go/discovery":  "use the dynamic client or a raw request instead",
	"testing":                     "move what the binary needs out of the test helper package",
	"net/http/httptest":           "serve with net/http directly",
}

func TestNoHeavyClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"cmd/crdserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for h, instead := range heavy {
			if dep == h || strings.HasPrefix(dep, h+"/") {
				t.Errorf("crdserver links %s; %s", dep, instead)
			}
		}
	}
}
